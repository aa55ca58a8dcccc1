// The data guide's one-sided example: every place registers a mailbox and learns everyone's
// with an allgather; each writes into its right neighbour's box with rput, without running any
// code there, and reads it back with rget.
#include <apgas/apgas.hpp>

#include <algorithm>
#include <cstdio>
#include <span>
#include <vector>

using apgas::task;

struct ring { // one activity at every place
  task<bool> operator()() const {
    const apgas::team all = apgas::team::world();
    const long me = apgas::here();
    const long n = apgas::places();
    apgas::registered_array<long> box(3); // reachable by rget/rput from every place
    const std::vector<apgas::global_ptr<long>> boxes = co_await all.allgather(box.ptr());

    const auto right = static_cast<apgas::place_id>((me + 1) % n);
    const long mail[2] = {100 + me, 200 + me};
    co_await apgas::rput(boxes[right] + 1, std::span<const long>(mail)); // there on return
    co_await all.barrier(); // every place's put is done, so every box is full

    const long left = (me + n - 1) % n;
    const std::span<long> mine = box.local();
    const long back = co_await apgas::rget(boxes[right] + 2); // what this place wrote there
    co_await all.barrier(); // nobody reads a box once its owner has freed it
    const bool ok = mine[1] == 100 + left && mine[2] == 200 + left && back == 200 + me;
    co_return ok;
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const bool ok = rt.run([]() -> task<bool> {
    const std::vector<bool> each = co_await apgas::at_each_place(ring{});
    co_return std::find(each.begin(), each.end(), false) == each.end();
  });
  if (rt.here() == 0)
    std::printf("%u place(s): %s\n", rt.places(),
                ok ? "every box holds its left neighbour's mail" : "wrong mail");
  return ok ? 0 : 1;
}
