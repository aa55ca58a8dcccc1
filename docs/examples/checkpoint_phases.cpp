// The checkpoint guide's phased example: a rod whose cells are smoothed with their neighbours,
// phase after phase, in a dist_array over every place. Run with
//   --checkpoint DIR --checkpoint-every SECONDS
// it saves the array, the phase and the running sum between phases; run again with
// --resume DIR, on any number of places, it loads them and goes on, to the same last value.
#include <apgas/apgas.hpp>
#include <apgas/phase_checkpoint.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using apgas::task;

constexpr std::size_t k_n = 20'000;
constexpr std::uint64_t k_phases = 1000;

struct smooth { // one activity at every place
  task<double> operator()() const {
    const apgas::team all = apgas::team::world();
    auto a = co_await apgas::dist_array<double>::make(
        all, apgas::distribution::block(k_n, all.size()), 1); // the outer ghosts stay 0
    a.for_each_local([](std::size_t i, double& x) { x = static_cast<double>(i * 7 % 11); });
    double watched_sum = 0; // a reduction carried from phase to phase: saved too

    // The program's name and parameters identify its checkpoints.
    const std::string program = "checkpoint_phases";
    auto ck = co_await apgas::phase_checkpoint::make(all, program, k_n, k_phases);
    std::uint64_t first = 0;
    if (ck.resuming()) { // into this job's distribution, whatever the places that saved it
      first = ck.phase();
      auto cells = apgas::saved("cells", a);
      auto sum = apgas::saved("watched_sum", watched_sum);
      co_await ck.load(cells, sum);
      if (all.rank() == 0)
        std::printf("resumed from %s after phase %llu\n", ck.resumed_path().c_str(),
                    static_cast<unsigned long long>(first));
    }

    std::vector<double> next(a.local().size());
    for (std::uint64_t phase = first; phase < k_phases; ++phase) {
      co_await a.exchange_halo();
      const std::span<double> x = a.local();
      for (std::size_t j = 0; j < x.size(); ++j) {
        const double left = j == 0 ? a.ghosts_left()[0] : x[j - 1];
        const double right = j + 1 == x.size() ? a.ghosts_right()[0] : x[j + 1];
        next[j] = (left + x[j] + right) / 3;
      }
      std::copy(next.begin(), next.end(), x.begin());
      // Cell 30's value, near the cold end, summed over the phases (its owner's, at every place).
      const std::size_t watched = 30;
      const double mine =
          a.owner(watched) == apgas::here() ? x[a.dist().local_index(watched)] : 0.0;
      watched_sum += co_await all.allreduce(mine, apgas::sum);
      if (co_await ck.due()) { // collective: every place gets the same answer
        auto cells = apgas::saved("cells", a);
        auto sum = apgas::saved("watched_sum", watched_sum);
        co_await ck.save(phase + 1, cells, sum); // the state after phase + 1 phases
      }
    }
    const double last = co_await a.get(k_n - 20); // the same bits, whatever the places
    co_await all.barrier();                       // nobody reads the array once it is gone
    co_return last + watched_sum;
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const double result =
      rt.run([]() -> task<double> { co_return (co_await apgas::at_each_place(smooth{}))[0]; });
  if (rt.here() == 0) // %a: every bit of it, to compare runs
    std::printf("%u place(s): after %llu phases %a\n", rt.places(),
                static_cast<unsigned long long>(k_phases), result);
  return 0;
}
