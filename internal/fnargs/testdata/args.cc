// C++ shapes for fnargs: templates, classes by reference, a class the ABI passes by
// invisible reference, member functions (this), enum class, references to scalars.
// Each function prints what it received as `ftrace graph` prints it.
#include <cstdio>
#include <cstring>

#define N __attribute__((noinline))

// prints s as a C string literal, as the formatter does (not traced: no -pg entry)
__attribute__((no_instrument_function)) static void put_quoted(const char *s)
{
	std::putchar('"');
	for (; *s; s++) {
		if (*s == '\t')
			std::fputs("\\t", stdout);
		else if (*s == '"' || *s == '\\')
			std::printf("\\%c", *s);
		else
			std::putchar(*s);
	}
	std::putchar('"');
}

enum class Mode : short { Read = 1, Write = 2, Append = -3 };

struct Vec2 { float x, y; };

class Buffer {
public:
	Buffer(const char *s) : len_(std::strlen(s)) { std::memcpy(data_, s, len_ + 1); }
	Buffer(const Buffer &o) : len_(o.len_) { std::memcpy(data_, o.data_, len_ + 1); }
	~Buffer() { len_ = 0; }
	N long size(int extra) const;
	const char *data() const { return data_; }
private:
	long len_;
	char data_[32];
};

N long Buffer::size(int extra) const { long r = len_ + extra; std::printf("Buffer::size(this=%p, extra=%d) = %ld\n", (const void *)this, extra, r); return r; }

template <typename T> N T biggest(T a, T b) { T r = a > b ? a : b; return r; }
template <> N int biggest<int>(int a, int b) { int r = a > b ? a : b; std::printf("biggest<int>(a=%d, b=%d) = %d\n", a, b, r); return r; }
template <> N double biggest<double>(double a, double b) { double r = a > b ? a : b; std::printf("biggest<double>(a=%g, b=%g) = %g\n", a, b, r); return r; }

N bool open_it(const Buffer &name, Mode m, bool create) { std::printf("open_it(name=%p, m=%s, create=%s) = %s\n", (const void *)&name, m == Mode::Read ? "Read" : m == Mode::Write ? "Write" : "Append", create ? "true" : "false", create ? "true" : "false"); return create; }
N long consume(Buffer b, int &count) { count++; std::printf("consume(b=%p, count=%p) = %ld\n", (const void *)&b, (void *)&count, (long)std::strlen(b.data())); return (long)std::strlen(b.data()); }
N Vec2 flip(Vec2 v, const char *why) { Vec2 r = {v.y, v.x}; std::printf("flip(v={x=%g, y=%g}, why=", v.x, v.y); put_quoted(why); std::printf(") = {x=%g, y=%g}\n", r.x, r.y); return r; }
namespace net { N int send(const char *msg, unsigned short port) { std::printf("net::send(msg=\"%s\", port=%u) = %d\n", msg, port, (int)port % 7); return (int)port % 7; } }

int main()
{
	Buffer b("hello");
	int count = 0;
	long t = b.size(3);
	t += biggest(4, 9) + (long)biggest(2.5, -1.0);
	t += open_it(b, Mode::Append, true) + open_it(b, Mode::Write, false);
	t += consume(b, count);
	t += (long)flip(Vec2{1.5f, -2.0f}, "tab\there \"q\"").x;
	t += net::send("ping", 8080);
	return t == 0;
}
