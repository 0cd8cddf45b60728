#include <cstdio>
int main() { std::puts("esi: under construction"); return 0; }
