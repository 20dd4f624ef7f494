#include <iostream>
#include "t.h"

int main()
{
	std::vector<int> v{1, 2, 3, 4, 5};
	Counter c;
	c.bump(accumulate_all(v));
	c.bump(work(10));
	std::cout << describe(c.get()) << "\n";
	std::vector<std::string> s{"a", "b", "c"};
	std::cout << accumulate_all(s) << "\n";
	return 0;
}
