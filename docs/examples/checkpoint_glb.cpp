// The checkpoint guide's example: a GLB run that outlives its job. Run with
//   --checkpoint DIR --checkpoint-every SECONDS
// it writes checkpoints as it goes; run again with --resume DIR, on any number of places, it
// goes on from the newest complete one. The program itself has nothing to do for that.
#include <apgas/apgas.hpp>
#include <apgas/glb.hpp>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

bool is_prime(std::uint64_t x) {
  if (x < 2) return false;
  for (std::uint64_t d = 2; d * d <= x; ++d)
    if (x % d == 0) return false;
  return true;
}

// The numbers [first, last) whose primes are to be counted, as a stack of intervals.
struct prime_bag {
  using result_type = std::uint64_t; // primes found so far
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;

  std::size_t process(std::size_t n, std::uint64_t& primes) {
    std::size_t done = 0;
    for (; done < n && !ranges.empty(); ++done) {
      primes += is_prime(ranges.back().first++) ? 1 : 0;
      if (ranges.back().first == ranges.back().second) ranges.pop_back();
    }
    return done;
  }
  prime_bag split() {
    prime_bag half;
    for (auto& [first, last] : ranges)
      if (last - first >= 2) half.ranges.emplace_back(first + (last - first) / 2, last);
    for (auto& [first, last] : ranges)
      if (last - first >= 2) last = first + (last - first) / 2;
    return half;
  }
  void merge(prime_bag&& other) {
    ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
  }
  bool empty() const { return ranges.empty(); }
  static void reduce(std::uint64_t& into, const std::uint64_t& from) { into += from; }
  // What a checkpoint saves of the bag is what moves it between places: its serialization.
  template <class A>
  void serialize(A& a) {
    a& ranges;
  }
};

struct make_bag { // not called when the run resumes: the bags come from the checkpoint
  prime_bag operator()(std::uint64_t n) const {
    prime_bag b;
    if (apgas::here() == 0) b.ranges.emplace_back(0, n);
    return b;
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const std::uint64_t n = 4'000'000;
  const auto out = rt.run(apgas::glb::run_with_stats(make_bag{}, n));
  if (rt.here() == 0) {
    if (!out.stats.resumed_from.empty())
      std::printf("resumed from %s\n", out.stats.resumed_from.c_str());
    std::printf("%u place(s): %llu primes below %llu, %llu checkpoint(s) written\n", rt.places(),
                static_cast<unsigned long long>(out.value), static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(out.stats.checkpoints));
  }
  return out.value == 283'146 ? 0 : 1; // pi(4,000,000)
}
