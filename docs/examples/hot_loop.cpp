// The performance guide's example: one hot loop written in a coroutine body, and the same loop
// in a plain function that the coroutine calls. Prints the time of each and their ratio.
#include <apgas/apgas.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

using apgas::task;

constexpr std::uint64_t k_words = 1 << 16; // a table that stays in the cache
constexpr std::uint64_t k_updates = 1 << 24;

inline std::uint64_t next(std::uint64_t x) {
  return x * 6364136223846793005ULL + 1442695040888963407ULL;
}

// The loop in the coroutine body: x and sum live in the coroutine's frame.
task<std::uint64_t> in_body(std::vector<std::uint64_t>& table, std::uint64_t x) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < k_updates; ++i) {
    x = next(x);
    table[x >> 48] ^= x;
    sum += table[(x >> 32) & (k_words - 1)];
  }
  co_return sum;
}

// The same loop in a plain function: x and sum stay in registers.
inline std::uint64_t update(std::vector<std::uint64_t>& table, std::uint64_t x) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < k_updates; ++i) {
    x = next(x);
    table[x >> 48] ^= x;
    sum += table[(x >> 32) & (k_words - 1)];
  }
  return sum;
}

task<std::uint64_t> via_function(std::vector<std::uint64_t>& table, std::uint64_t x) {
  co_return update(table, x); // the coroutine only calls it
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  std::vector<std::uint64_t> table(k_words);
  double best_body = 1e9;
  double best_function = 1e9;
  bool same = true;
  for (int rep = 0; rep < 5; ++rep) { // best of 5, the two versions in turn
    std::uint64_t sums[2];
    for (int version = 0; version < 2; ++version) {
      std::iota(table.begin(), table.end(), 0);
      const auto start = std::chrono::steady_clock::now();
      sums[version] = version == 0 ? rt.run(in_body(table, 42)) : rt.run(via_function(table, 42));
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      double& best = version == 0 ? best_body : best_function;
      best = std::min(best, took.count());
    }
    same = same && sums[0] == sums[1];
  }
  if (rt.here() != 0) return 0;
  std::printf("loop in the coroutine body: %.2f ns per update\n", best_body * 1e9 / k_updates);
  std::printf("loop in a plain function:   %.2f ns per update\n", best_function * 1e9 / k_updates);
  std::printf("body / function: %.2fx, %s\n", best_body / best_function,
              same ? "same results" : "DIFFERENT RESULTS");
  return same ? 0 : 1;
}
