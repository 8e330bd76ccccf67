// C++: fills a std::vector with pseudo-random ints (argv[1] elements, default 20000), sorts
// it and sums it with std::accumulate.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 20000;
  std::vector<unsigned> values(n);
  unsigned x = 99;
  for (auto &v : values)
    v = x = x * 1103515245u + 12345u;
  std::sort(values.begin(), values.end());
  unsigned long long sum = std::accumulate(values.begin(), values.end(), 0ULL);
  std::printf("%llu %u\n", sum, values[n / 2]);
  return 0;
}
