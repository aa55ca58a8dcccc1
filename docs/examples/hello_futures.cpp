// The data guide's futures example: two ats in flight at once, a task started now and awaited
// later, and an exception that reaches whoever awaits its future.
#include <apgas/apgas.hpp>

#include <cstdio>
#include <stdexcept>

using apgas::task;

task<long> fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await apgas::finish_all(fib(n - 1), fib(n - 2));
  co_return a + b;
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const long total = rt.run([]() -> task<long> {
    const apgas::place_id last = apgas::places() - 1;
    // Both requests leave now; neither answer is awaited yet.
    apgas::future<long> a = co_await apgas::at_async(
        last, [](long x) { return x * 2; }, 20L);
    apgas::future<long> b = co_await apgas::at_async(0, [] { return long{apgas::here()}; });
    apgas::future<long> c = co_await apgas::start(fib(20)); // any task, as an activity here
    auto [x, y] = co_await apgas::when_all(std::move(a), std::move(b));
    const long z = co_await c;

    apgas::future<int> bad =
        co_await apgas::at_async(last, []() -> int { throw std::out_of_range("no such cell"); });
    try {
      (void)co_await bad;
    } catch (const std::out_of_range&) { // its own type, from the place where it was thrown
      co_return x + y + z;
    }
    co_return -1;
  });
  if (rt.here() == 0) std::printf("%u place(s): 40 + 0 + 6765 = %ld\n", rt.places(), total);
  return total == 6805 ? 0 : 1;
}
