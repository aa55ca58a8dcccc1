// quicksort N [--cutoff C] [--seed S]: parallel quicksort of N random ints. Checked against
// std::sort of a copy (sorted, and a permutation of the input); quicksort_seq (unless
// --no-seq) gives the speedup.
#include "apgas_apps/cli.hpp"
#include "apgas_apps/quicksort.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr std::size_t k_max_n = 1'000'000'000; // 12 GB: input, reference and work copies

std::vector<int> random_ints(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int> v(n);
  // The top 32 bits, not a distribution: the data is the same with every standard library.
  for (int& x : v) x = static_cast<int>(static_cast<std::uint32_t>(gen() >> 32));
  return v;
}

/// Empty if `v` equals `reference` (std::sort of the input), else what is wrong.
std::string check(const std::vector<int>& v, const std::vector<int>& reference, const char* who) {
  const auto unsorted = std::is_sorted_until(v.begin(), v.end());
  if (unsorted != v.end())
    return fmt::format("{}: out of order at index {}", who, unsorted - v.begin());
  const auto [a, b] = std::mismatch(v.begin(), v.end(), reference.begin());
  if (a != v.end()) {
    return fmt::format("{}: sorted but not a permutation of the input (index {}: {}, std::sort "
                       "has {})",
                       who, a - v.begin(), *a, *b);
  }
  return {};
}

} // namespace

int main(int argc, char** argv) {
  std::size_t n = 0;
  std::size_t cutoff = 1;
  std::uint64_t seed = 1;
  apgas_apps::cli cli("quicksort",
                      "Quicksort: partitions sequentially, then sorts the two parts in parallel "
                      "(one\nasync per partition of more than C elements) of N random ints.");
  cli.positional("N", "number of elements (0 to 1000000000)", n, std::size_t{0}, k_max_n);
  cli.option("--cutoff", "C", "ranges of at most C elements sort sequentially (default 1)", cutoff,
             std::size_t{0}, std::numeric_limits<std::size_t>::max());
  cli.option("--seed", "S", "seed of the std::mt19937_64 that makes the data (default 1)", seed,
             std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max());
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    apgas_apps::report r;
    const std::vector<int> input = random_ints(n, seed);
    std::vector<int> reference = input;
    const double std_sort_seconds =
        apgas_apps::seconds_of([&] { std::sort(reference.begin(), reference.end()); });
    std::vector<int> work;
    r.seconds = std::numeric_limits<double>::infinity();
    for (int i = 0; i < flags.repeat; ++i) {
      work = input;
      r.seconds = std::min(r.seconds, apgas_apps::seconds_of([&] {
                             rt.run(apgas_apps::quicksort(work.data(), work.size(), cutoff));
                           }));
      if (r.failure.empty()) r.failure = check(work, reference, "quicksort");
    }
    const bool sorted = std::is_sorted(work.begin(), work.end());
    if (flags.run_seq) {
      r.seq_seconds = std::numeric_limits<double>::infinity();
      for (int i = 0; i < flags.repeat; ++i) {
        work = input;
        r.seq_seconds = std::min(*r.seq_seconds, apgas_apps::seconds_of([&] {
          apgas_apps::quicksort_seq(work.data(), work.size());
        }));
        if (r.failure.empty()) r.failure = check(work, reference, "quicksort_seq");
      }
    }
    r.title = fmt::format("quicksort({})", n);
    r.result = sorted ? "sorted" : "not sorted";
    r.verified = r.failure.empty();
    r.work = apgas_apps::work_amount{static_cast<double>(n), "elements"};
    r.extra.add("n", n).add("cutoff", cutoff).add("seed", seed);
    r.extra.add("std_sort_seconds", std_sort_seconds);
    return r;
  });
}
