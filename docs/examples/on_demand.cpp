// The on-demand guide's example: a loop whose iterations differ in cost, and a depth-first
// traversal of a graph, each run sequentially by one worker until another asks for work.
#include <apgas/apgas.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

using apgas::task;

// Row i costs i steps: equal halves of the range are unequal work.
std::uint64_t row(std::uint64_t i) {
  std::uint64_t h = i + 1;
  for (std::uint64_t j = 0; j < i; ++j) h = h * 6364136223846793005ULL + 1442695040888963407ULL;
  return h >> 60;
}

// A graph of n vertices: vertex v links to 2v + 1, 2v + 2 and (v + 7) % n.
std::vector<std::uint32_t> links(std::uint32_t v, std::uint32_t n) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t w : {2ULL * v + 1, 2ULL * v + 2, (v + 7ULL) % n})
    if (w < n) out.push_back(static_cast<std::uint32_t>(w));
  return out;
}

task<> example(std::vector<std::uint64_t>& rows, std::vector<std::atomic<bool>>& seen,
               std::atomic<std::uint64_t>& reached) {
  co_await apgas::for_on_demand(std::uint64_t{0}, std::uint64_t{rows.size()},
                                [&](std::uint64_t i) { rows[i] = row(i); });

  const auto n = static_cast<std::uint32_t>(seen.size());
  seen[0] = true;
  std::vector<std::uint32_t> roots{0};
  co_await apgas::traverse_on_demand(std::move(roots),
                                     [&](std::uint32_t v, apgas::work_list<std::uint32_t>& more) {
                                       reached.fetch_add(1, std::memory_order_relaxed);
                                       for (std::uint32_t w : links(v, n))
                                         if (!seen[w].exchange(true, std::memory_order_relaxed))
                                           more.push(w); // claim w once
                                     });
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  std::vector<std::uint64_t> rows(20000);
  std::vector<std::atomic<bool>> seen(1000000);
  std::atomic<std::uint64_t> reached{0};
  rt.run([&] { return example(rows, seen, reached); });
  if (rt.here() == 0) {
    std::uint64_t sum = 0;
    for (std::uint64_t r : rows) sum += r;
    std::printf("%u place(s): row sum %llu, %llu vertices reached\n", rt.places(),
                static_cast<unsigned long long>(sum),
                static_cast<unsigned long long>(reached.load()));
  }
  return 0;
}
