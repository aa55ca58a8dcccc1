// bench_idle: what a place costs while it has nothing to do. Place 0 waits S seconds (its
// main activity sleeps) while the other places idle; each of them reports the CPU time its
// process used meanwhile and its voluntary context switches (one per park of a worker: its
// wake-ups). The peer: a raw MPI rank that waits as long in MPI_Recv, measured the same way
// in the same run, before the runtime exists.
//
//   launch/apgasrun -n 2 --threads 1 build/bench/bench/places/bench_idle [--seconds S]
//   build/bench/bench/places/bench_idle [--seconds S] [--threads T]    (one place, no mpirun)
//
// Started without mpirun the program is one place, with no peer: the place measures itself
// while its main activity sleeps (its other workers idle).
//
// With several places a second row: place 0 waits S seconds on a finish whose one activity
// runs at place 1 (it sleeps there): what place 0 uses while it expects that finish's report.
#include "common.hpp"
#include "mpi_process.hpp"
#include <sys/resource.h>

namespace {

using namespace apgas_bench;

/// CPU time and voluntary context switches of this process so far.
struct usage {
  double cpu_s = 0;
  long switches = 0;

  static usage now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
    };
    return {s(u.ru_utime) + s(u.ru_stime), u.ru_nvcsw};
  }
  usage operator-(const usage& o) const { return {cpu_s - o.cpu_s, switches - o.switches}; }
};

/// What the waiting places used, per second of waiting, averaged over them.
struct idle_cost {
  double cpu_share = 0;     ///< CPU seconds per second (1.0: a whole core)
  double wakeups_per_s = 0; ///< voluntary context switches per second
};

idle_cost average(const std::vector<usage>& used, double seconds) {
  idle_cost c;
  for (const usage& u : used) {
    c.cpu_share += u.cpu_s / seconds;
    c.wakeups_per_s += static_cast<double>(u.switches) / seconds;
  }
  c.cpu_share /= static_cast<double>(used.size());
  c.wakeups_per_s /= static_cast<double>(used.size());
  return c;
}

/// Raw MPI: ranks 1.. wait in MPI_Recv until rank 0 sends, `seconds` later. Rank 0 gets what
/// each used meanwhile.
std::vector<usage> raw_mpi_wait(double seconds) {
  const int rank = world_rank();
  const int size = world_size();
  MPI_Barrier(MPI_COMM_WORLD);
  usage used;
  if (rank == 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    for (int p = 1; p < size; ++p) MPI_Send(nullptr, 0, MPI_BYTE, p, 0, MPI_COMM_WORLD);
  } else {
    const usage before = usage::now();
    MPI_Recv(nullptr, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    used = usage::now() - before;
  }
  std::vector<usage> all(static_cast<std::size_t>(size));
  MPI_Gather(&used, sizeof used, MPI_BYTE, all.data(), sizeof used, MPI_BYTE, 0, MPI_COMM_WORLD);
  all.erase(all.begin()); // rank 0 slept: not a waiting rank
  return all;
}

/// apgas: place 0's main activity sleeps `seconds`; the other places (or, alone, this place
/// itself) are measured across it, read with at_each_place before and after.
apgas::task<std::vector<usage>> apgas_wait(double seconds) {
  if (apgas::places() == 1) {
    const usage before = usage::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    co_return std::vector<usage>{usage::now() - before};
  }
  const std::vector<usage> before = co_await apgas::at_each_place([] { return usage::now(); });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::vector<usage> after = co_await apgas::at_each_place([] { return usage::now(); });
  std::vector<usage> used; // places 1..: place 0 slept, it did not wait
  for (std::size_t p = 1; p < after.size(); ++p) used.push_back(after[p] - before[p]);
  co_return used;
}

/// apgas: place 0 waits on a finish whose one activity sleeps `seconds` at place 1; what place
/// 0 used meanwhile.
apgas::task<usage> apgas_wait_for_finish(double seconds) {
  const usage before = usage::now();
  co_await apgas::finish([seconds]() -> apgas::task<> {
    co_await apgas::async_at(
        1, [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); },
        seconds);
  });
  co_return usage::now() - before;
}

void print_row(const char* what, const idle_cost& c) {
  std::printf("| %s | %.2f | %.0f |\n", what, 100.0 * c.cpu_share, c.wakeups_per_s);
}

} // namespace

int main(int argc, char** argv) {
  // The runtime's flags first: runtime_options consumes them, the rest are ours.
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const double seconds = f.get("--seconds", 2.0);
  f.done();
  if (!(seconds > 0 && seconds <= 3600)) {
    std::fprintf(stderr, "--seconds: expected a number of seconds from 0 to 3600\n");
    return 2;
  }
  const bool launched = apgas::detail::mpi_launched(); // else one place, no MPI at all
  if (launched) init_mpi(argc, argv);
  const bool peer = launched && world_size() > 1;
  std::vector<usage> raw;
  if (peer) raw = raw_mpi_wait(seconds);

  apgas::runtime rt(opts);
  const std::vector<usage> ours = rt.run([seconds] { return apgas_wait(seconds); });
  usage waiting{};
  if (rt.places() > 1) waiting = rt.run([seconds] { return apgas_wait_for_finish(seconds); });
  if (rt.here() != 0) return 0;

  std::printf("bench_idle: %u place(s) x %u worker(s), %.1f s of waiting at place 0\n\n",
              rt.places(), rt.threads(), seconds);
  std::printf("| who waits | CPU (%% of a core) | wake-ups per s |\n|---|---:|---:|\n");
  const idle_cost c_ours = average(ours, seconds);
  print_row(rt.places() == 1 ? "apgas, one place (main activity asleep, other workers idle)"
                             : "apgas place (idle workers)",
            c_ours);
  const idle_cost c_waiting = average({waiting}, seconds);
  if (rt.places() > 1) print_row("apgas place 0 waiting on a remote finish", c_waiting);
  if (peer) {
    const idle_cost c_raw = average(raw, seconds);
    print_row("raw MPI rank in MPI_Recv", c_raw);
    std::printf("\nan idle apgas place uses %.1fx less CPU than a rank waiting in MPI_Recv\n",
                c_raw.cpu_share / std::max(c_ours.cpu_share, 1e-6));
    std::printf("RESULT idle apgas_cpu_pct=%.3f apgas_wakeups_per_s=%.0f raw_cpu_pct=%.3f "
                "waiting_cpu_pct=%.3f\n",
                100.0 * c_ours.cpu_share, c_ours.wakeups_per_s, 100.0 * c_raw.cpu_share,
                100.0 * c_waiting.cpu_share);
  } else {
    std::printf("RESULT idle apgas_cpu_pct=%.3f apgas_wakeups_per_s=%.0f\n",
                100.0 * c_ours.cpu_share, c_ours.wakeups_per_s);
  }
  return 0;
}
