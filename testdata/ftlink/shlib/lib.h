int lib_calc(int x);
int lib_helper(int x);
