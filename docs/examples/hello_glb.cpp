// The GLB guide's example: irregular work (Collatz chains of different lengths) spread over
// every place and worker by the lifeline-based global load balancer.
#include <apgas/apgas.hpp>
#include <apgas/glb.hpp>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

std::uint64_t collatz_steps(std::uint64_t x) {
  std::uint64_t steps = 0;
  for (; x != 1; ++steps) x = x % 2 == 0 ? x / 2 : 3 * x + 1;
  return steps;
}

// A bag of numbers whose Collatz steps are to be summed: ranges [first, last).
struct collatz_bag {
  using result_type = std::uint64_t; // steps so far; 0 is the identity of the reduction
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;

  std::size_t process(std::size_t n, std::uint64_t& steps) { // up to n numbers
    std::size_t done = 0;
    for (; done < n && !ranges.empty(); ++done) {
      steps += collatz_steps(ranges.back().first++);
      if (ranges.back().first == ranges.back().second) ranges.pop_back();
    }
    return done;
  }
  collatz_bag split() { // the upper half of every range: loot for another worker or place
    collatz_bag loot;
    for (auto& [first, last] : ranges) {
      const std::uint64_t half = (last - first) / 2;
      if (half > 0) loot.ranges.emplace_back(last - half, last);
      last -= half;
    }
    return loot;
  }
  void merge(collatz_bag&& other) {
    ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
  }
  bool empty() const { return ranges.empty(); }
  static void reduce(std::uint64_t& into, const std::uint64_t& from) { into += from; }
  // Loot travels between places: the bag says how it is serialized.
  template <class A>
  void serialize(A& a) {
    a& ranges;
  }
};

// Each place's first bag: all the work at place 0, none elsewhere (the others steal it).
struct make_bag {
  collatz_bag operator()(std::uint64_t n) const {
    collatz_bag b;
    if (apgas::here() == 0) b.ranges.emplace_back(1, n);
    return b;
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const std::uint64_t n = 1'000'000;
  const std::uint64_t steps = rt.run(apgas::glb::run(make_bag{}, n));
  std::uint64_t check = 0;
  if (rt.here() == 0) {
    for (std::uint64_t x = 1; x < n; ++x) check += collatz_steps(x);
    std::printf("%u place(s): %llu Collatz steps below %llu\n", rt.places(),
                static_cast<unsigned long long>(steps), static_cast<unsigned long long>(n));
  }
  return rt.here() != 0 || steps == check ? 0 : 1;
}
