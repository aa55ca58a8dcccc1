// bench_collectives: a team's collectives against the same MPI calls, in the same job.
//
//   launch/apgasrun -n P bench_collectives [--iters N] [--rounds R] [--big-iters N]
//
// One activity per place calls each collective N times (after a warm-up); the MPI peer calls
// the blocking MPI function on MPI_COMM_WORLD as many times, before each round's runtime
// exists (see common.hpp), and rounds take turns (the machine's speed drifts). Medians over
// rounds; every result is checked. Targets: barrier and allreduce of 8 bytes at most 1.2x
// MPI, allreduce of 1 MiB and alltoallv of 1 MiB per place at most 1.1x.
#include "common.hpp"

#include <numeric>
#include <span>

namespace {

using namespace apgas_bench;
using apgas::task;

constexpr std::size_t k_big_doubles = (1U << 20) / sizeof(double); // 1 MiB

enum class op { barrier, allreduce_8, allreduce_1m, alltoallv_1m };

struct row {
  op what;
  const char* name;
  double target;
  bool big;
  std::vector<double> mpi, mpi_nonblocking, apgas;
};

/// The blocks of an alltoallv of `bytes` per place: rank r sends (r + d) % P's block a size
/// that differs by destination, summing to `bytes`.
std::vector<int> alltoallv_counts(int size, int rank) {
  std::vector<int> counts(static_cast<std::size_t>(size));
  const int total = static_cast<int>(k_big_doubles);
  int given = 0;
  for (int d = 0; d < size; ++d) {
    const int n = d + 1 == size ? total - given : total / size + (d - size / 2) * 8;
    counts[static_cast<std::size_t>((rank + d) % size)] = n;
    given += n;
  }
  return counts;
}

/// Seconds per MPI call: the blocking function, or (nonblocking) its I-form completed by an
/// MPI_Test loop, which is what the runtime's polling does.
double mpi_seconds(op what, int n, bool nonblocking) {
  const int size = world_size();
  const int rank = world_rank();
  long in = rank + 1;
  long out = 0;
  std::vector<double> big(k_big_doubles, 1.0);
  std::vector<double> got(k_big_doubles * 2);
  std::vector<int> sc, sd, rc, rd;
  if (what == op::alltoallv_1m) {
    sc = alltoallv_counts(size, rank);
    for (int r = 0; r < size; ++r)
      rc.push_back(alltoallv_counts(size, r)[static_cast<std::size_t>(rank)]);
    sd.assign(sc.size(), 0);
    rd.assign(rc.size(), 0);
    std::partial_sum(sc.begin(), sc.end() - 1, sd.begin() + 1);
    std::partial_sum(rc.begin(), rc.end() - 1, rd.begin() + 1);
  }
  const auto wait = [](MPI_Request r) {
    int done = 0;
    while (done == 0) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  };
  const auto call_nonblocking = [&] {
    MPI_Request r = MPI_REQUEST_NULL;
    switch (what) {
    case op::barrier:
      MPI_Ibarrier(MPI_COMM_WORLD, &r);
      break;
    case op::allreduce_8:
      MPI_Iallreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &r);
      break;
    case op::allreduce_1m:
      MPI_Iallreduce(MPI_IN_PLACE, big.data(), static_cast<int>(k_big_doubles), MPI_DOUBLE, MPI_SUM,
                     MPI_COMM_WORLD, &r);
      break;
    case op::alltoallv_1m:
      MPI_Ialltoallv(big.data(), sc.data(), sd.data(), MPI_DOUBLE, got.data(), rc.data(), rd.data(),
                     MPI_DOUBLE, MPI_COMM_WORLD, &r);
      break;
    }
    wait(r);
    if (what == op::allreduce_1m) std::fill(big.begin(), big.end(), 1.0);
  };
  const auto call = [&] {
    if (nonblocking) {
      call_nonblocking();
      return;
    }
    switch (what) {
    case op::barrier:
      MPI_Barrier(MPI_COMM_WORLD);
      break;
    case op::allreduce_8:
      MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      break;
    case op::allreduce_1m:
      MPI_Allreduce(MPI_IN_PLACE, big.data(), static_cast<int>(k_big_doubles), MPI_DOUBLE, MPI_SUM,
                    MPI_COMM_WORLD);
      std::fill(big.begin(), big.end(), 1.0);
      break;
    case op::alltoallv_1m:
      MPI_Alltoallv(big.data(), sc.data(), sd.data(), MPI_DOUBLE, got.data(), rc.data(), rd.data(),
                    MPI_DOUBLE, MPI_COMM_WORLD);
      break;
    }
  };
  for (int i = 0; i < n / 10 + 2; ++i) call();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock::now();
  for (int i = 0; i < n; ++i) call();
  const double dt = seconds_since(t0);
  if (what == op::allreduce_8 && out != static_cast<long>(size) * (size + 1) / 2)
    fail("MPI_Allreduce gave a wrong sum");
  return dt / n;
}

struct apgas_collective {
  task<double> operator()(int which, int n) const {
    const auto what = static_cast<op>(which);
    const apgas::team t = apgas::team::world();
    const long size = t.size();
    const long me = t.rank();
    std::vector<double> big(k_big_doubles, 1.0);
    // alltoallv: the counts every member knows, as MPI_Alltoallv's peer has them.
    std::vector<std::size_t> send_counts, recv_counts;
    std::vector<double> got;
    if (what == op::alltoallv_1m) {
      for (int c : alltoallv_counts(static_cast<int>(size), static_cast<int>(me)))
        send_counts.push_back(static_cast<std::size_t>(c));
      for (long r = 0; r < size; ++r)
        recv_counts.push_back(static_cast<std::size_t>(alltoallv_counts(
            static_cast<int>(size), static_cast<int>(r))[static_cast<std::size_t>(me)]));
      got.resize(k_big_doubles * 2);
    }
    bool ok = true;
    auto t0 = clock::now();
    for (int i = -(n / 10 + 2); i < n; ++i) {
      if (i == 0) {
        co_await t.barrier();
        t0 = clock::now();
      }
      switch (what) {
      case op::barrier:
        co_await t.barrier();
        break;
      case op::allreduce_8:
        ok = ok && co_await t.allreduce(me + 1, apgas::sum) == size * (size + 1) / 2;
        break;
      case op::allreduce_1m:
        co_await t.allreduce(std::span<double>(big), apgas::sum);
        ok = ok && big[k_big_doubles / 2] == static_cast<double>(size);
        std::fill(big.begin(), big.end(), 1.0);
        break;
      case op::alltoallv_1m:
        got[0] = 0;
        co_await t.alltoallv(std::span<const double>(big), send_counts, std::span<double>(got),
                             recv_counts);
        ok = ok && got[0] == 1.0;
        break;
      }
    }
    const double dt = seconds_since(t0) / n;
    if (!ok) throw std::runtime_error("a collective gave a wrong result");
    co_return dt;
  }
};

/// Seconds per call at place 0 (each place runs its own loop, one activity each).
double apgas_seconds(apgas::runtime& rt, op what, int n) {
  return rt.run([what, n]() -> task<double> {
    const std::vector<double> each =
        co_await apgas::at_each_place(apgas_collective{}, static_cast<int>(what), n);
    co_return *std::max_element(each.begin(), each.end());
  });
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const int iters = f.get("--iters", 20000);
  const int big_iters = f.get("--big-iters", 200);
  const int rounds = f.get("--rounds", 5);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  f.done();
  if (iters < 1 || big_iters < 1 || rounds < 1) {
    std::fprintf(stderr, "--iters, --big-iters and --rounds must be at least 1\n");
    return 2;
  }
  const int level = init_mpi(argc, argv);
  row rows[] = {
      {op::barrier, "barrier vs MPI_Barrier", 1.2, false, {}, {}, {}},
      {op::allreduce_8, "allreduce 8 B vs MPI_Allreduce", 1.2, false, {}, {}, {}},
      {op::allreduce_1m, "allreduce 1 MiB vs MPI_Allreduce", 1.1, true, {}, {}, {}},
      {op::alltoallv_1m, "alltoallv 1 MiB/place vs MPI_Alltoallv", 1.1, true, {}, {}, {}}};
  std::string description;
  apgas::place_id here = 0;
  for (int round = 0; round < rounds; ++round) {
    for (row& r : rows) {
      r.mpi.push_back(mpi_seconds(r.what, r.big ? big_iters : iters, false));
      r.mpi_nonblocking.push_back(mpi_seconds(r.what, r.big ? big_iters : iters, true));
    }
    apgas::runtime rt(opts);
    watchdog dog(rt, watchdog_s);
    here = rt.here();
    description = describe(rt, level);
    for (row& r : rows) {
      watchdog::phase() = r.name;
      r.apgas.push_back(apgas_seconds(rt, r.what, r.big ? big_iters : iters));
    }
  }
  if (here != 0) return 0;
  fmt::print("bench_collectives: one activity per place calls the team collective, against the "
             "MPI call\n  {}\n  {} calls ({} for 1 MiB) in each of {} rounds (median over "
             "rounds)\n\n",
             description, iters, big_iters, rounds);
  fmt::print("| collective | MPI us | MPI I-form + MPI_Test us | apgas us | ratio | target |\n"
             "|---|---:|---:|---:|---:|---|\n");
  for (row& r : rows) {
    const double mpi = summarize(r.mpi).median * 1e6;
    const double mpi_nb = summarize(r.mpi_nonblocking).median * 1e6;
    const double mine = summarize(r.apgas).median * 1e6;
    const double ratio = mine / mpi;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} (<= {:.1f}) |\n", r.name, mpi, mpi_nb,
               mine, ratio, ratio <= r.target ? "pass" : "MISS", r.target);
  }
  return 0;
}
