// SPDX-License-Identifier: Apache-2.0
// std::string in every place a plan meets one (TestStdString): by reference, by value,
// by pointer, by rvalue reference, returned, a member's this, and a std::string * that
// is not one to read (a pointer to pointer); std::string_view by value and returned, and
// by reference and pointer.
#include <string>
#include <string_view>

struct Box {
	std::string name;
	__attribute__((noipa)) size_t len() const { return name.size(); }
};

__attribute__((noipa)) size_t by_ref(const std::string &s) { return s.size(); }
__attribute__((noipa)) size_t by_val(std::string s) { return s.size(); }
__attribute__((noipa)) size_t by_ptr(const std::string *s) { return s ? s->size() : 0; }
__attribute__((noipa)) size_t by_rref(std::string &&s) { return s.size(); }
__attribute__((noipa)) size_t by_pptr(std::string **s) { return *s ? (*s)->size() : 0; }
__attribute__((noipa)) std::string made(int n) { return std::string(static_cast<size_t>(n), 'x'); }
__attribute__((noipa)) size_t in_box(const Box &b) { return b.len(); }
__attribute__((noipa)) size_t view(std::string_view v) { return v.size(); }
__attribute__((noipa)) size_t view_ref(const std::string_view &v) { return v.size(); }
__attribute__((noipa)) size_t view_ptr(const std::string_view *v) { return v ? v->size() : 0; }
__attribute__((noipa)) std::string_view view_of(const std::string &s) { return s; }

int main(int argc, char **argv)
{
	std::string a(argv[0]), *p = &a;
	std::string_view va(a);
	Box b{a};

	return static_cast<int>(by_ref(a) + by_val(a) + by_ptr(&a) + by_rref(std::string(a)) +
				by_pptr(&p) + made(argc).size() + in_box(b) + view(a) + view_ref(a) +
				view_ptr(&va) + view_of(a).size()) & 1;
}
