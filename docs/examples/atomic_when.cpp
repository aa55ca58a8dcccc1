// The atomic and when guide's example: a bounded buffer between 8 producers and 8 consumers.
#include <apgas/apgas.hpp>

#include <array>
#include <cstdio>

using apgas::task;

struct buffer { // used only inside atomic blocks and whens
  std::array<int, 4> slots{};
  int head = 0;
  int count = 0;
  void put(int v) { slots[(head + count++) % 4] = v; }
  int take() {
    const int v = slots[head];
    head = (head + 1) % 4;
    --count;
    return v;
  }
};

task<> produce(buffer& b, int from, int to) {
  for (int v = from; v < to; ++v) // suspends while the buffer is full
    co_await apgas::when([&] { return b.count < 4; }, [&] { b.put(v); });
}

task<> consume(buffer& b, int items, long& sum) {
  for (int i = 0; i < items; ++i) {
    const int v = co_await apgas::when([&] { return b.count > 0; }, [&] { return b.take(); });
    co_await apgas::atomic([&] { sum += v; });
  }
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  buffer b;
  long sum = 0;
  rt.run([&]() -> task<> {
    co_await apgas::finish([&]() -> task<> { // 16 activities, whatever the number of workers
      for (int c = 0; c < 8; ++c) co_await apgas::async(consume(b, 1000, sum));
      for (int p = 0; p < 8; ++p) co_await apgas::async(produce(b, p * 1000, (p + 1) * 1000));
    });
  });
  if (rt.here() != 0) return 0;    // the root activity ran at place 0
  std::printf("sum = %ld\n", sum); // 0 + 1 + ... + 7999
  return sum == 7999L * 8000 / 2 ? 0 : 1;
}
