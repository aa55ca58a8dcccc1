// How a job ends when the user stops it, when a run's exception is not caught, and when the
// places run different builds: one line per place that says why, never a hang, never Open
// MPI's backtrace (run by job_end_check.cmake under mpiexec, with a time limit).
//
//   mpiexec -n P job_end MODE [runtime flags...]      (or without mpiexec: one place)
//
// Built twice, as job_end and job_end_other (APGAS_TEST_OTHER_BUILD): two builds of the same
// source, which the runtime must refuse to run together (mpiexec -n 1 job_end ok : -n 1
// job_end_other ok).
#include <apgas/apgas.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using apgas::task;

#ifdef APGAS_TEST_OTHER_BUILD
constexpr const char* k_build = "job_end_other";
#else
constexpr const char* k_build = "job_end";
#endif

constexpr std::string_view k_modes[] = {
    "ok",               // a run that succeeds (the same build everywhere)
    "uncaught",         // the run fails at the last place and nobody catches it
    "stop-places",      // SIGTERM to every place (what Slurm's scancel does)
    "stop-place",       // SIGTERM to the last place only
    "interrupt-places", // SIGINT to every place
    "stop-job",         // SIGTERM to mpiexec (`kill` of the job)
    "interrupt-job",    // SIGINT to mpiexec (Ctrl-C)
};

enum class target { every_place, last_place, launcher };

/// The job's launcher on this node: Open MPI's mpiexec is a rank's parent; MPICH's (Hydra)
/// starts the ranks through a proxy, hydra_pmi_proxy, whose parent it is.
pid_t launcher() {
  const pid_t parent = ::getppid();
  std::ifstream comm("/proc/" + std::to_string(parent) + "/comm");
  std::string name;
  std::getline(comm, name);
  if (name != "hydra_pmi_proxy") return parent;
  // /proc/PID/stat: "pid (comm) state ppid ...", the name in parentheses without spaces here.
  std::ifstream stat("/proc/" + std::to_string(parent) + "/stat");
  std::string pid, paren_comm, state;
  pid_t grandparent = parent;
  stat >> pid >> paren_comm >> state >> grandparent;
  return grandparent;
}

/// Once every place serves the run, the signal goes out; the run then waits to be ended.
task<> stop(int sig, target to) {
  // Every place is inside the runtime, its handlers installed, and tells its process id.
  const std::vector<long> pids = co_await apgas::at_each_place([] { return long{::getpid()}; });
  std::printf("job_end: every place runs; sending signal %d\n", sig);
  std::fflush(stdout);
  if (to == target::launcher) {
    ::kill(launcher(), sig);
  } else if (to == target::last_place) {
    ::kill(static_cast<pid_t>(pids.back()), sig);
  } else {
    // Every place runs on this machine (the tests start them so).
    for (std::size_t p = pids.size(); p-- > 0;) ::kill(static_cast<pid_t>(pids[p]), sig);
  }
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10)); // until the job ends
}

} // namespace

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const std::string_view mode = argc > 1 ? argv[1] : "";
  const bool to_launcher = mode == "stop-job" || mode == "interrupt-job";
  if (std::find(std::begin(k_modes), std::end(k_modes), mode) == std::end(k_modes) ||
      (to_launcher && rt.places() < 2)) { // alone, the parent is no launcher: a shell, ctest

    if (rt.here() == 0) {
      std::fprintf(
          stderr, "usage: mpiexec -n P %s MODE [runtime flags] (P >= 2 for *-job); MODE:", k_build);
      for (std::string_view m : k_modes) std::fprintf(stderr, " %.*s", int(m.size()), m.data());
      std::fprintf(stderr, "\n");
    }
    return 2;
  }
  if (mode == "ok") {
    const long places = rt.run([]() -> task<long> {
      const auto each = co_await apgas::at_each_place([] { return 1L; });
      co_return static_cast<long>(each.size());
    });
    if (rt.here() == 0) std::printf("%s: %ld place(s) ran\n", k_build, places);
    return places == rt.places() ? 0 : 1;
  }
  if (mode == "uncaught") {
    rt.run([]() -> task<> {
      co_await apgas::finish([]() -> task<> {
        co_await apgas::async_at(apgas::places() - 1,
                                 [] { throw std::runtime_error("job_end: the last place fails"); });
      });
    });
  } else if (mode == "stop-places") {
    rt.run(stop(SIGTERM, target::every_place));
  } else if (mode == "interrupt-places") {
    rt.run(stop(SIGINT, target::every_place));
  } else if (mode == "stop-place") {
    rt.run(stop(SIGTERM, target::last_place));
  } else if (mode == "stop-job") {
    rt.run(stop(SIGTERM, target::launcher));
  } else {
    rt.run(stop(SIGINT, target::launcher));
  }
  std::printf("job_end: place %u: the run ended although it should not have\n", rt.here());
  return 0;
}
