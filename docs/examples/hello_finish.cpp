// The README's example: finish, async, finish_all and a sequential call.
#include <apgas/apgas.hpp>

#include <atomic>
#include <cstdio>

using apgas::task;

task<long> fib(int n) {
  if (n < 2) co_return n;
  // finish { async a = fib(n-1); async b = fib(n-2); } with both results.
  auto [a, b] = co_await apgas::finish_all(fib(n - 1), fib(n - 2));
  co_return a + b;
}

task<> count_to(std::atomic<int>& counter, int n) {
  for (int i = 0; i < n; ++i)
    co_await apgas::async([&counter] { counter.fetch_add(1); }); // escapes count_to
  co_return;
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv); // --threads N, --policy work-first|help-first|adaptive, --stats
  std::atomic<int> counter{0};
  long f = rt.run([&]() -> task<long> {
    co_await apgas::finish([&]() -> task<> {
      co_await count_to(counter, 100); // its asyncs belong to this finish
      co_await apgas::async(count_to(counter, 100));
    }); // here all 200 increments have happened
    co_return co_await fib(25);
  });
  std::printf("counter = %d, fib(25) = %ld\n", counter.load(), f);
  return counter.load() == 200 && f == 75025 ? 0 : 1;
}
