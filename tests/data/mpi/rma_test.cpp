// One-sided get and put under mpiexec at 1, 2 and 4 places (and 2 workers): values and ranges
// read and written at every place with no code run there, puts visible once their finish ends,
// big transfers, and misuse.
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas::global_ptr;
using apgas::place_id;
using apgas::task;

apgas::runtime* g_rt = nullptr;

constexpr std::size_t k_cells = 1 << 14; // 128 KiB of longs per place

/// This place's registered memory (a process is a place): cell i holds here() * 1'000'000 + i.
std::unique_ptr<apgas::registered_array<long>> g_memory;

struct make_memory {
  global_ptr<long> operator()() const {
    g_memory = std::make_unique<apgas::registered_array<long>>(k_cells);
    auto cells = g_memory->local();
    for (std::size_t i = 0; i < cells.size(); ++i)
      cells[i] = static_cast<long>(apgas::here()) * 1'000'000 + static_cast<long>(i);
    return g_memory->ptr();
  }
};
struct free_memory {
  void operator()() const { g_memory.reset(); }
};

class rma : public testing::Test {
protected:
  void SetUp() override {
    m_ptrs = g_rt->run([]() -> task<std::vector<global_ptr<long>>> {
      co_return co_await apgas::at_each_place(make_memory{});
    });
  }
  void TearDown() override {
    g_rt->run([]() -> task<> { co_await apgas::for_each_place(free_memory{}); });
  }
  std::vector<global_ptr<long>> m_ptrs;
};

TEST_F(rma, rget_reads_every_places_memory) {
  const long bad = g_rt->run([ptrs = m_ptrs]() -> task<long> {
    long bad = 0;
    for (place_id p = 0; p < apgas::places(); ++p)
      for (std::size_t i : {0UL, 1UL, 777UL, k_cells - 1}) {
        const long v = co_await apgas::rget(ptrs[p] + static_cast<std::ptrdiff_t>(i));
        if (v != static_cast<long>(p) * 1'000'000 + static_cast<long>(i)) ++bad;
      }
    co_return bad;
  });
  EXPECT_EQ(bad, 0);
}

struct read_local {
  long operator()(std::size_t i) const { return g_memory->local()[i]; }
};

TEST_F(rma, rput_writes_are_there_once_it_returns_and_once_their_finish_ends) {
  const long bad = g_rt->run([ptrs = m_ptrs]() -> task<long> {
    const place_id n = apgas::places();
    long bad = 0;
    // Each place writes one cell of every place, from an activity there: the finish ends
    // after every put is visible.
    co_await apgas::finish([&]() -> task<> {
      for (place_id q = 0; q < n; ++q)
        co_await apgas::async_at(
            q,
            [](std::vector<global_ptr<long>> targets) -> task<> {
              for (place_id r = 0; r < targets.size(); ++r)
                co_await apgas::rput(targets[r] + static_cast<std::ptrdiff_t>(100 + apgas::here()),
                                     -static_cast<long>(apgas::here()) - 1);
            },
            ptrs);
    });
    for (place_id r = 0; r < n; ++r)
      for (place_id q = 0; q < n; ++q)
        if (co_await apgas::at(r, read_local{}, static_cast<std::size_t>(100 + q)) !=
            -static_cast<long>(q) - 1)
          ++bad;
    co_return bad;
  });
  EXPECT_EQ(bad, 0);
}

TEST_F(rma, ranges_of_64_kib_both_ways) {
  const bool ok = g_rt->run([ptrs = m_ptrs]() -> task<bool> {
    const place_id last = apgas::places() - 1;
    std::vector<long> buf(8192); // 64 KiB
    co_await apgas::rget(ptrs[last] + 5, std::span<long>(buf));
    bool ok = buf[0] == static_cast<long>(last) * 1'000'000 + 5 &&
              buf.back() == static_cast<long>(last) * 1'000'000 + 5 + 8191;
    std::iota(buf.begin(), buf.end(), 7L);
    co_await apgas::rput(ptrs[last] + 1000, std::span<const long>(buf));
    std::vector<long> back(8192);
    co_await apgas::rget(ptrs[last] + 1000, std::span<long>(back));
    co_return ok&& back == buf;
  });
  EXPECT_TRUE(ok);
}

TEST_F(rma, misuse_throws) {
  const std::string what = g_rt->run([ptrs = m_ptrs]() -> task<std::string> {
    std::string s;
    try {
      (void)co_await apgas::rget(global_ptr<long>());
    } catch (const std::invalid_argument& e) {
      s += e.what();
    }
    if (apgas::places() > 1) {
      try {
        (void)ptrs[apgas::places() - 1].local();
      } catch (const std::logic_error& e) {
        s += e.what();
      }
    }
    co_return s;
  });
  EXPECT_NE(what.find("null global_ptr"), std::string::npos) << what;
  if (g_rt->places() > 1) {
    EXPECT_NE(what.find("away from its place"), std::string::npos) << what;
  }
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
