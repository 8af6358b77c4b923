#include <cstdio>
int main() { std::puts("attnc 0.1.0"); return 0; }
