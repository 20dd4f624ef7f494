// SPDX-License-Identifier: Apache-2.0
/*
 * --auto-args on C++: a function template's instances, a class passed by reference and
 * by value, a member function (its this), an enum class, std::string by reference, by
 * value, by pointer (NULL, and one whose text cannot be read) and returned, std::string_view
 * by value (empty too), returned and by reference (noipa: no clone with another signature, which
 * --auto-args leaves out).  Each call prints itself the way ftrace graph shows it; the test
 * compares the two.
 */
#include <cstdio>
#include <string>
#include <string_view>

enum class Mode { Fast = 1, Slow = 2 };

struct Point {
	int x, y;
};

template <typename T> __attribute__((noipa)) T twice(T v)
{
	T r = v + v;
	if constexpr (sizeof(T) == sizeof(double))
		std::printf("twice<double>(v=%g) = %g\n", v, r);
	else
		std::printf("twice<int>(v=%d) = %d\n", v, r);
	return r;
}

__attribute__((noipa)) int norm1(const Point &p)
{
	int n = (p.x < 0 ? -p.x : p.x) + (p.y < 0 ? -p.y : p.y);
	std::printf("norm1(p=%p) = %d\n", static_cast<const void *>(&p), n);
	return n;
}

__attribute__((noipa)) Point flip(Point p)
{
	Point q = { p.y, p.x };
	std::printf("flip(p={x=%d, y=%d}) = {x=%d, y=%d}\n", p.x, p.y, q.x, q.y);
	return q;
}

__attribute__((noipa)) int run(Mode m, bool verbose)
{
	std::printf("run(m=%s, verbose=%s) = %d\n", m == Mode::Fast ? "Fast" : "Slow",
		    verbose ? "true" : "false", static_cast<int>(m) * 10);
	return static_cast<int>(m) * 10;
}

struct Counter {
	long n = 0;
	__attribute__((noipa)) long add(long k)
	{
		n += k;
		std::printf("Counter::add(this=%p, k=%ld) = %ld\n", static_cast<void *>(this), k, n);
		return n;
	}
};

/*
 * A std::string as the reader quotes its text: the first 64 bytes (the copy's bound), a
 * byte outside printable ASCII as \xHH (the reader's \n, \t and \r are not needed
 * here), "..." after a cut one.  Not traced: the test's, not the program's.
 */
/* both: arm64's entry nops come from -fpatchable-function-entry, not -pg */
__attribute__((no_instrument_function, patchable_function_entry(0, 0))) static std::string
litn(const char *p, size_t len)
{
	std::string q = "\"";
	char hex[8];

	for (size_t i = 0; i < len && i < 64; i++) {
		unsigned char c = static_cast<unsigned char>(p[i]);

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			q += static_cast<char>(c);
		} else {
			std::snprintf(hex, sizeof(hex), "\\x%02x", c);
			q += hex;
		}
	}
	return q + "\"" + (len > 64 ? "..." : "");
}

__attribute__((no_instrument_function, patchable_function_entry(0, 0))) static std::string
lit(const std::string *s)
{
	return s ? litn(s->data(), s->size()) : "NULL";
}

__attribute__((noipa)) size_t words(const std::string &s)
{
	size_t n = s.empty() ? 0 : 1;

	for (char c : s)
		n += c == ' ';
	std::printf("words(s=%s) = %zu\n", lit(&s).c_str(), n);
	return n;
}

__attribute__((noipa)) size_t measure(std::string s, int pad)
{
	std::printf("measure(s=%s, pad=%d) = %zu\n", lit(&s).c_str(), pad, s.size() + pad);
	return s.size() + pad;
}

/* the text pointer of a string made to be unreadable (in the first page) */
static const char *const badtext = reinterpret_cast<const char *>(16);

/* reads only the length of a string whose text may be unreadable */
__attribute__((noipa)) size_t sized(const std::string *s)
{
	size_t n = s ? s->size() : 0;

	std::printf("sized(s=%s) = %zu\n", s && s->data() == badtext ? "<bad>" : lit(s).c_str(), n);
	return n;
}

__attribute__((noipa)) std::string label(int n)
{
	std::string r = "item-" + std::to_string(n);

	/* the name as demangled: a function returning std::string has the ABI's tag */
	std::printf("label[abi:cxx11](n=%d) = %s\n", n, lit(&r).c_str());
	return r;
}

/* a std::string_view by value and returned: two words, its length and data pointer */
__attribute__((noipa)) std::string_view first_word(std::string_view s)
{
	std::string_view w = s.substr(0, s.find(' '));

	std::printf("first_word(s=%s) = %s\n", litn(s.data(), s.size()).c_str(),
		    litn(w.data(), w.size()).c_str());
	return w;
}

/* a std::string_view by reference: its address, whose length and data pointer are read */
__attribute__((noipa)) size_t spaces(const std::string_view &s)
{
	size_t n = 0;

	for (char ch : s)
		n += ch == ' ';
	std::printf("spaces(s=%s) = %zu\n", litn(s.data(), s.size()).c_str(), n);
	return n;
}

int main()
{
	Point p = { 3, -4 };
	Counter c;

	twice(21);
	twice(2.25);
	norm1(p);
	flip(p);
	run(Mode::Slow, true);
	c.add(5);
	c.add(-2);

	std::string hi = "hello big world", bin("nul\0in\x7f", 7), longer(100, 'q');
	/* libstdc++'s layout with a text pointer into the first page: a bad string */
	const char *fake[2] = { badtext, reinterpret_cast<const char *>(3) };

	words(hi);
	measure(bin, 2);
	sized(&longer);
	sized(nullptr);
	sized(reinterpret_cast<const std::string *>(fake));
	label(42);
	first_word(hi);
	first_word(longer);
	first_word(std::string_view());
	std::string_view hv(hi), lv(longer);
	spaces(hv);
	spaces(lv);
	return 0;
}
