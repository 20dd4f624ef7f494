// SPDX-License-Identifier: Apache-2.0
/*
 * An exception thrown through a function reached by a tail call (at -O2 outer's call of
 * inner is `b inner` on arm64: outer keeps no frame record) that has a cleanup (the
 * string's destructor: a landing pad, then _Unwind_Resume).  Under function_graph on arm64
 * the unwinder met return_to_handler in inner's record and went round for ever (the
 * jsoncpp trial).
 */
#include <cstdio>
#include <string>

[[noreturn]] __attribute__((noinline)) void thr(const std::string &s)
{
	throw static_cast<int>(s.size());
}

__attribute__((noinline)) void inner(int x)
{
	if (x) {
		std::string s(static_cast<size_t>(40 + x), 'x');
		thr(s);
	}
}

__attribute__((noinline)) void outer(int x) { inner(x); }

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 1; i <= 3; i++) {
		try {
			outer(argc + i);
		} catch (int n) {
			std::printf("caught %d\n", n);
		}
	}
	return 0;
}
