// C++: methods, templates and overloads filtered by demangled and mangled names, exact
// counts, and exceptions thrown through traced functions while callbacks run.
#include <cerrno>
#include <stdexcept>
#include "check.h"

namespace ns {
struct Foo {
	int v;
	NOINLINE int bar(int x) { __asm__ volatile(""); return v + x; }
	NOINLINE int baz(int x) { __asm__ volatile(""); return v * x; }
};
template <class T> NOINLINE T twice(T x) { __asm__ volatile(""); return x + x; }
// demangled "decltype ({parm#1}+{parm#1}) ns::thrice<int>(int)": a return type with parentheses
template <class T> NOINLINE auto thrice(T x) -> decltype(x + x) { __asm__ volatile(""); return x + x + x; }
// "bool ns::operator< <ns::Foo>(ns::Foo const&, ns::Foo const&)": a '<' that opens nothing
template <class T> NOINLINE bool operator<(const T &a, const T &b) { __asm__ volatile(""); return a.v < b.v; }
NOINLINE int over(int x) { __asm__ volatile(""); return x; }
NOINLINE double over(double x) { __asm__ volatile(""); return x; }
NOINLINE int thrower(int x)
{
	__asm__ volatile("");
	if (x > 2)
		throw std::runtime_error("boom");
	return x;
}
NOINLINE int catcher(int x)
{
	try {
		return thrower(x);
	} catch (const std::exception &) {
		return -1;
	}
}
} // namespace ns

static volatile long calls;

extern "C" CB void cb(unsigned long, unsigned long, struct ftrace_ops *, struct ftrace_regs *)
{
	calls++;
}

// Calls made through volatile pointers, so the compiler cannot fold or clone them.
static CB long run(struct ftrace_ops *ops, const char *pat)
{
	int (ns::Foo::*volatile bar)(int) = &ns::Foo::bar;
	int (ns::Foo::*volatile baz)(int) = &ns::Foo::baz;
	int (*volatile ti)(int) = ns::twice<int>;
	long (*volatile tl)(long) = ns::twice<long>;
	int (*volatile th)(int) = ns::thrice<int>;
	bool (*volatile lt)(const ns::Foo &, const ns::Foo &) = ns::operator< <ns::Foo>;
	int (*volatile oi)(int) = ns::over;
	double (*volatile od)(double) = ns::over;
	ns::Foo f{3};
	int r;

	calls = 0;
	r = ftrace_set_filter(ops, pat, (int)strlen(pat), 1);
	if (r)
		return r;
	CHECK_EQ(register_ftrace_function(ops), 0);
	CHECK_EQ((f.*bar)(1), 4);
	CHECK_EQ((f.*baz)(2), 6);
	CHECK_EQ(ti(2), 4);
	CHECK_EQ(tl(3), 6);
	CHECK_EQ(th(2), 6);
	CHECK(lt(f, ns::Foo{4}));
	CHECK_EQ(oi(5), 5);
	CHECK(od(1.5) == 1.5);
	CHECK_EQ(unregister_ftrace_function(ops), 0);
	return calls;
}

int main()
{
	static struct ftrace_ops ops;

	ops.func = cb;
	static const struct { const char *pat; long want; } cases[] = {
		{ "ns::Foo::bar*", 1 },
		{ "ns::Foo::*", 2 },
		{ "_ZN2ns3Foo3bazEi", 1 },
		{ "_ZN2ns3Foo*", 2 },
		{ "ns::twice<*>*", 2 },
		{ "ns::twice<long>*", 1 },
		{ "ns::thrice<*>*", 1 },
		{ "ns::operator<?<*>*", 1 },	// a space separates globs: ? stands for it
		{ "ns::over(int)", 1 },
		{ "ns::over*", 2 },
		{ "ns::* !ns::over*", 6 },
	};

	for (const auto &c : cases) {
		long got = run(&ops, c.pat);
		if (got != c.want) {
			failures++;
			fprintf(stderr, "FAIL: filter \"%s\": %ld calls, want %ld\n", c.pat, got, c.want);
		}
	}
	CHECK_EQ(run(&ops, "ns::nothing*"), -ENODEV);

	// Exceptions unwinding through traced frames, with every function traced.
	CHECK_EQ(ftrace_set_filter(&ops, nullptr, 0, 1), 0);
	calls = 0;
	CHECK_EQ(register_ftrace_function(&ops), 0);
	int (*volatile c)(int) = ns::catcher;
	CHECK_EQ(c(1), 1);
	CHECK_EQ(c(5), -1);
	CHECK_EQ(c(2), 2);
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	CHECK(calls >= 6);	// catcher and thrower, three times
	DONE();
}
