// The data guide's distributed array example: a 1D array over every place, each cell smoothed
// with its neighbours through ghost cells filled by exchange_halo, summed over the team, and
// read from place 0; checked against the same steps on one vector.
#include <apgas/apgas.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

using apgas::task;

constexpr std::size_t k_n = 1000;
constexpr int k_steps = 50;

double initial(std::size_t i) { return i % 10 == 0 ? 10.0 : 0.0; }

struct smooth { // one activity at every place
  task<double> operator()() const {
    const apgas::team all = apgas::team::world();
    // A block per place with one ghost cell on each side; the array's outer ghosts stay 0.
    auto a = co_await apgas::dist_array<double>::make(
        all, apgas::distribution::block(k_n, all.size()), 1);
    a.for_each_local([](std::size_t i, double& x) { x = initial(i); });
    std::vector<double> next(a.local().size());
    for (int step = 0; step < k_steps; ++step) {
      co_await a.exchange_halo(); // one message per neighbour
      const std::span<double> x = a.local();
      for (std::size_t j = 0; j < x.size(); ++j) {
        const double left = j == 0 ? a.ghosts_left()[0] : x[j - 1];
        const double right = j + 1 == x.size() ? a.ghosts_right()[0] : x[j + 1];
        next[j] = (left + x[j] + right) / 3;
      }
      std::copy(next.begin(), next.end(), x.begin());
    }
    const double total = co_await a.reduce(0.0, apgas::sum); // over every place's part
    bool same = true;
    if (apgas::here() == 0) { // the same steps on one vector, with the two outer ghosts
      std::vector<double> seq(k_n + 2, 0.0), after(k_n + 2, 0.0);
      for (std::size_t i = 0; i < k_n; ++i) seq[i + 1] = initial(i);
      for (int step = 0; step < k_steps; ++step) {
        for (std::size_t i = 1; i <= k_n; ++i) after[i] = (seq[i - 1] + seq[i] + seq[i + 1]) / 3;
        std::swap(seq, after);
      }
      for (std::size_t i : {std::size_t{0}, k_n / 2 + 3, k_n - 1}) {
        const double got = co_await a.get(i); // any element, from anywhere
        same = same && got == seq[i + 1];     // (the same expressions: equal)
      }
      double seq_total = 0;
      for (double x : seq) seq_total += x;
      same = same && std::fabs(total - seq_total) < 1e-9 * seq_total; // another order of sums
    }
    co_await all.barrier(); // nobody reads the array once it is gone
    co_return same ? total : -1.0;
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const double total =
      rt.run([]() -> task<double> { co_return (co_await apgas::at_each_place(smooth{}))[0]; });
  if (rt.here() == 0)
    std::printf("%u place(s): total after %d steps = %.6f\n", rt.places(), k_steps, total);
  return total > 0 ? 0 : 1;
}
