// The finish and async guide's example: a divide-and-conquer sum with finish_all, an async
// that leaves its value in a variable, a flat loop of asyncs under the adaptive policy, and
// failures gathered by a finish.
#include <apgas/apgas.hpp>

#include <cstdio>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

using apgas::task;

task<long> sum(std::span<const long> v) {
  if (v.size() <= 4096) co_return std::accumulate(v.begin(), v.end(), 0L); // plain code
  const std::size_t half = v.size() / 2;
  auto [a, b] = co_await apgas::finish_all(sum(v.first(half)), sum(v.subspan(half)));
  co_return a + b;
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  std::vector<long> v(1'000'000);
  std::iota(v.begin(), v.end(), 1);
  std::vector<long> squares(100'000);
  std::string failure;
  const long total = rt.run([&]() -> task<long> {
    long left = 0;
    long right = 0;
    co_await apgas::finish([&]() -> task<> {
      const std::span<const long> all(v);
      co_await apgas::async(sum(all.first(v.size() / 2)), left); // left = sum(...), in parallel
      right = co_await sum(all.subspan(v.size() / 2));           // in sequence
    });
    // Here `left` holds its value.
    // 100,000 tiny asyncs: adaptive keeps few of them waiting at once.
    co_await apgas::finish(apgas::policy::adaptive, [&]() -> task<> {
      for (std::size_t i = 0; i < squares.size(); ++i)
        co_await apgas::async([&squares, i] { squares[i] = static_cast<long>(i * i); });
    });
    try {
      co_await apgas::finish([]() -> task<> {
        for (int i = 0; i < 3; ++i)
          co_await apgas::async([i] { throw std::runtime_error("part " + std::to_string(i)); });
      });
    } catch (const apgas::multiple_exceptions& e) { // after all three have ended
      failure = e.what();
    }
    co_return left + right;
  });
  if (rt.here() != 0) return 0;
  std::printf("sum = %ld, squares[99999] = %ld, %s\n", total, squares.back(), failure.c_str());
  return total == 500'000'500'000L && squares.back() == 99'999L * 99'999L ? 0 : 1;
}
