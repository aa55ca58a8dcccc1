/// @file Fibonacci: the classic measure of spawn cost (one async per call above the cutoff).
#pragma once

#include <apgas/apgas.hpp>

namespace apgas_apps {

/// @brief Sequential reference. noinline keeps the compiler from folding the recursion.
[[gnu::noinline]] inline long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

/// @brief Parallel fib: finish { async a = fib(n-1); async b = fib(n-2); } (as finish_all)
/// down to `cutoff`, below which it runs fib_seq. cutoff <= 2 means one task per call.
inline apgas::task<long> fib(int n, int cutoff = 0) {
  if (n < 2) co_return n;
  if (n < cutoff) co_return fib_seq(n);
  auto [a, b] = co_await apgas::finish_all(fib(n - 1, cutoff), fib(n - 2, cutoff));
  co_return a + b;
}

} // namespace apgas_apps
