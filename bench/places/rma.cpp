// bench_rma: one-sided access from place 0 to place 1's memory, one access at a time (each
// waited for before the next): apgas rget/rput against MPI_Get/MPI_Put in a passive-target
// epoch (MPI_Win_lock_all, then MPI_Win_flush after each access), and against apgas::at
// fetching (or storing) the same bytes, in the same job.
//
//   launch/apgasrun -n 2 --threads 1 bench_rma [--iters N] [--big-iters N] [--rounds R]
//
// Sizes 8 B and 64 KiB. Each round runs the MPI peer on a window of its own (MPI_Win_create
// over 64 KiB at every rank) while no runtime exists (see common.hpp), and a runtime of its
// own for rget/rput and at; the peer and the runtime take turns at going first. Each access is
// timed: the figures are the median access over all rounds (a few slow ones, when the machine
// runs something else, do not move it). Every get is checked against what the target holds,
// and every put is read back at the target after the loop. Targets: rget/rput at most 1.3x MPI
// at 8 B and 1.1x at 64 KiB. `at` moving the same bytes is printed beside them, for choosing
// between the two (no target: which wins depends on the size and on the MPI; at 8 B on one
// machine `at` can win).
#include "common.hpp"

#include <cstring>
#include <optional>
#include <span>

namespace {

using namespace apgas_bench;
using apgas::task;

constexpr std::size_t k_big = std::size_t{64} * 1024;
constexpr std::size_t k_sizes[] = {8, k_big};

enum class way { get, put };

/// The byte at offset i of the target's memory (what gets must read): depends on the round, so
/// that a stale buffer cannot pass.
std::byte pattern(std::size_t i, int round) {
  return static_cast<std::byte>((i * 131 + static_cast<std::size_t>(round) * 17 + 1) & 0xff);
}

constexpr std::byte k_filler{0xa5};

/// What put i writes: its number in the first and last bytes, k_filler between (set once:
/// filling 64 KiB per put would be timed too).
void stamp(std::vector<std::byte>& v, std::size_t bytes, int i) {
  v[0] = static_cast<std::byte>(i & 0xff);
  v[bytes - 1] = static_cast<std::byte>((i >> 8) & 0xff);
}

bool holds_last_put(const std::byte* memory, std::size_t bytes, int last) {
  std::vector<std::byte> expect(k_big, k_filler);
  stamp(expect, bytes, last);
  return std::memcmp(memory, expect.data(), bytes) == 0;
}

/// The MPI peer: the seconds of each access at rank 0 (empty elsewhere: other ranks wait in a
/// barrier).
std::vector<double> mpi_samples(way w, std::size_t bytes, int n, int round) {
  const int me = world_rank();
  std::vector<std::byte> memory(k_big);
  for (std::size_t i = 0; i < k_big; ++i) memory[i] = pattern(i, round);
  MPI_Win win = MPI_WIN_NULL;
  MPI_Win_create(memory.data(), static_cast<MPI_Aint>(k_big), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                 &win);
  MPI_Win_lock_all(0, win);
  std::vector<std::byte> local(k_big, k_filler);
  const int count = static_cast<int>(bytes);
  std::vector<double> samples;
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    const auto access = [&](int i) {
      if (w == way::get) {
        MPI_Get(local.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, win);
      } else {
        stamp(local, bytes, i);
        MPI_Put(local.data(), count, MPI_BYTE, 1, 0, count, MPI_BYTE, win);
      }
      MPI_Win_flush(1, win);
    };
    for (int i = 0; i < n / 10 + 2; ++i) access(i);
    samples.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const auto t0 = clock::now();
      access(i);
      samples.push_back(seconds_since(t0));
    }
    if (w == way::get)
      for (std::size_t i = 0; i < bytes; ++i)
        if (local[i] != pattern(i, round)) fail("MPI_Get read wrong bytes");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_unlock_all(win);
  if (me == 1 && w == way::put && !holds_last_put(memory.data(), bytes, n - 1))
    fail("MPI_Put left wrong bytes");
  MPI_Win_free(&win);
  return samples;
}

/// Every place's registered memory for the round (a place's own global: every place is a
/// process of its own).
std::optional<apgas::registered_array<std::byte>> g_memory;

struct make_memory {
  void operator()(int round) const {
    g_memory.emplace(k_big);
    std::span<std::byte> m = g_memory->local();
    for (std::size_t i = 0; i < k_big; ++i) m[i] = pattern(i, round);
  }
};
struct drop_memory {
  void operator()() const { g_memory.reset(); }
};
struct memory_ptr {
  apgas::global_ptr<std::byte> operator()() const { return g_memory->ptr(); }
};
/// `at`'s way: the bytes travel in the reply (get) or in the request (put).
struct fetch {
  std::vector<std::byte> operator()(std::size_t bytes) const {
    const std::span<std::byte> m = g_memory->local();
    return {m.begin(), m.begin() + static_cast<std::ptrdiff_t>(bytes)};
  }
};
struct store {
  void operator()(const std::vector<std::byte>& bytes) const {
    std::memcpy(g_memory->local().data(), bytes.data(), bytes.size());
  }
};
struct last_put_arrived {
  bool operator()(std::size_t bytes, int last) const {
    return holds_last_put(g_memory->local().data(), bytes, last);
  }
};

/// The seconds of each access from place 0 to place 1: rget/rput (one_sided) or at.
task<std::vector<double>> apgas_samples(way w, std::size_t bytes, int n, int round,
                                        bool one_sided) {
  co_await apgas::for_each_place(make_memory{}, round);
  const apgas::global_ptr<std::byte> target = co_await apgas::at(1, memory_ptr{});
  std::vector<std::byte> local(k_big, k_filler);
  const std::span<std::byte> part(local.data(), bytes);
  const auto access = [&](int i) -> task<> {
    if (w == way::get) {
      if (one_sided) co_await apgas::rget(target, part);
      else {
        const std::vector<std::byte> got = co_await apgas::at(1, fetch{}, bytes);
        std::memcpy(local.data(), got.data(), got.size()); // where rget puts them
      }
    } else {
      stamp(local, bytes, i);
      if (one_sided) co_await apgas::rput(target, std::span<const std::byte>(part));
      else co_await apgas::at(1, store{}, std::vector<std::byte>(part.begin(), part.end()));
    }
  };
  for (int i = 0; i < n / 10 + 2; ++i) co_await access(i);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock::now();
    co_await access(i);
    samples.push_back(seconds_since(t0));
  }
  if (w == way::get) {
    for (std::size_t i = 0; i < bytes; ++i)
      if (local[i] != pattern(i, round))
        throw std::runtime_error(one_sided ? "rget read wrong bytes" : "at fetched wrong bytes");
  } else if (!co_await apgas::at(1, last_put_arrived{}, bytes, n - 1)) {
    throw std::runtime_error(one_sided ? "rput left wrong bytes" : "at stored wrong bytes");
  }
  co_await apgas::for_each_place(drop_memory{});
  co_return samples;
}

struct row {
  way w;
  std::size_t bytes;
  double target;
  std::vector<double> mpi, one_sided, at; ///< the seconds of every access, all rounds
};

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const int iters = f.get("--iters", 20000);
  const int big_iters = f.get("--big-iters", 2000);
  const int rounds = f.get("--rounds", 5);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  f.done();
  if (iters < 1 || big_iters < 1 || rounds < 1) {
    std::fprintf(stderr, "--iters, --big-iters and --rounds must be at least 1\n");
    return 2;
  }
  const int level = init_mpi(argc, argv);
  if (world_size() < 2) {
    if (world_rank() == 0) std::fprintf(stderr, "bench_rma needs at least 2 places\n");
    return 2;
  }
  row rows[] = {{way::get, 8, 1.3, {}, {}, {}},
                {way::get, k_big, 1.1, {}, {}, {}},
                {way::put, 8, 1.3, {}, {}, {}},
                {way::put, k_big, 1.1, {}, {}, {}}};
  std::string description;
  apgas::place_id here = 0;
  const auto run_mpi = [&](int round) {
    for (row& r : rows) {
      const std::vector<double> got =
          mpi_samples(r.w, r.bytes, r.bytes == 8 ? iters : big_iters, round);
      r.mpi.insert(r.mpi.end(), got.begin(), got.end());
    }
  };
  for (int round = 0; round < rounds; ++round) {
    // MPI (which runs while no runtime exists) and apgas take turns at going first.
    if (round % 2 == 0) run_mpi(round);
    {
      apgas::runtime rt(opts);
      watchdog dog(rt, watchdog_s);
      here = rt.here();
      description = describe(rt, level);
      for (row& r : rows) {
        const int n = r.bytes == 8 ? iters : big_iters;
        watchdog::phase() = r.w == way::get ? "rget" : "rput";
        const std::vector<double> one_sided = rt.run(apgas_samples(r.w, r.bytes, n, round, true));
        r.one_sided.insert(r.one_sided.end(), one_sided.begin(), one_sided.end());
        watchdog::phase() = "at";
        const std::vector<double> at = rt.run(apgas_samples(r.w, r.bytes, n / 4 + 1, round, false));
        r.at.insert(r.at.end(), at.begin(), at.end());
      }
    }
    if (round % 2 != 0) run_mpi(round);
  }
  if (here != 0) return 0;
  fmt::print("bench_rma: place 0 reads or writes place 1's memory, one access at a time\n  {}\n"
             "  {} accesses of 8 B and {} of 64 KiB ({} and {} through at) in each of {} rounds; "
             "the median access of all rounds\n\n",
             description, iters, big_iters, iters / 4 + 1, big_iters / 4 + 1, rounds);
  fmt::print("| access | MPI us | apgas us | ratio | target | at us | at / apgas |\n"
             "|---|---:|---:|---:|---|---:|---:|\n");
  for (const row& r : rows) {
    const double mpi = summarize(r.mpi).median * 1e6;
    const double mine = summarize(r.one_sided).median * 1e6;
    const double at = summarize(r.at).median * 1e6;
    const double ratio = mine / mpi;
    fmt::print("| {} {} vs {} + flush | {:.2f} | {:.2f} | {:.2f} | {} (<= {:.1f}) | {:.2f} | "
               "{:.1f} |\n",
               r.w == way::get ? "rget" : "rput", r.bytes == 8 ? "8 B" : "64 KiB",
               r.w == way::get ? "MPI_Get" : "MPI_Put", mpi, mine, ratio,
               ratio <= r.target ? "pass" : "MISS", r.target, at, at / mine);
  }
  return 0;
}
