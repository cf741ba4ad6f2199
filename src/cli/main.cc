#include <cstdio>
int main() { std::puts("acan"); return 0; }
