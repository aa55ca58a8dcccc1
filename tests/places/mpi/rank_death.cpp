// A place that dies in the middle of a run: the job must end, with a message and a non-zero
// exit code, and never hang (run by rank_death_check.cmake under mpiexec, with a time limit).
//
//   mpiexec -n P rank_death MODE [runtime flags...]     (P >= 2)
//
// The last place dies; with `place-0` in MODE, place 0 does. Each mode dies at another moment
// of the protocols, where a survivor would wait for the dead place forever if nobody ended
// the job: MPI (mpiexec) ends it, and the runtime must not stand in its way (no signal
// handler that swallows the end, no thread that keeps the process alive, no exit code 0).
#include <apgas/apgas.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

using apgas::task;

constexpr std::string_view k_modes[] = {
    "kill-in-at",       // SIGKILL inside an `at` body, while the caller waits for its value
    "kill-in-async",    // SIGKILL inside an async_at, while its finish waits for the report
    "kill-in-stream",   // SIGKILL after 1,000 of a stream of 200,000 asyncs sent to it
    "exit-in-at",       // _Exit(3) inside an `at` body: gone without MPI_Finalize
    "abort-in-at",      // std::abort() inside an `at` body (SIGABRT, as a failed assert)
    "kill-at-shutdown", // SIGKILL when the run has ended, before the runtime shuts down
    "kill-place-0",     // place 0 (the main activity) SIGKILLs itself; the others serve
};

[[noreturn]] void die(const char* how) {
  std::printf("rank_death: place %u dies now (%s)\n", apgas::here(), how);
  std::fflush(stdout);
  if (std::strcmp(how, "exit") == 0) std::_Exit(3);
  if (std::strcmp(how, "abort") == 0) std::abort();
  std::raise(SIGKILL);
  std::abort(); // not reached
}

std::atomic<long> g_received{0};

task<> run(std::string_view mode) {
  const apgas::place_id victim = apgas::places() - 1;
  if (mode == "kill-in-at") {
    co_await apgas::at(victim, [] {
      die("kill");
      return 0;
    });
  } else if (mode == "exit-in-at") {
    co_await apgas::at(victim, [] {
      die("exit");
      return 0;
    });
  } else if (mode == "abort-in-at") {
    co_await apgas::at(victim, [] {
      die("abort");
      return 0;
    });
  } else if (mode == "kill-in-async") {
    co_await apgas::finish(
        [victim]() -> task<> { co_await apgas::async_at(victim, [] { die("kill"); }); });
  } else if (mode == "kill-in-stream") {
    co_await apgas::finish([victim]() -> task<> {
      for (int i = 0; i < 200'000; ++i)
        co_await apgas::async_at(victim, [] {
          // relaxed: a count of this place's own handlers, read by themselves only.
          if (g_received.fetch_add(1, std::memory_order_relaxed) == 1'000) die("kill");
        });
    });
  } else if (mode == "kill-place-0") {
    die("kill");
  }
  // kill-at-shutdown: dies in main, after the run.
}

} // namespace

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv); // takes the runtime's flags out of argv
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (std::find(std::begin(k_modes), std::end(k_modes), mode) == std::end(k_modes) ||
      rt.places() < 2) {
    if (rt.here() == 0) {
      std::fprintf(stderr, "usage: mpiexec -n P rank_death MODE [runtime flags], P >= 2; MODE:");
      for (std::string_view m : k_modes) std::fprintf(stderr, " %.*s", int(m.size()), m.data());
      std::fprintf(stderr, "\n");
    }
    return 2;
  }
  rt.run([mode]() -> task<> { co_await run(mode); });
  if (mode == "kill-at-shutdown") {
    if (rt.here() == rt.places() - 1) die("kill");
    return 0; // the others wait for it in the runtime's collective shutdown
  }
  // Reached only if the run ended although a place died in it: a bug.
  std::printf("rank_death: place %u: the run ended although a place died\n", rt.here());
  return 0;
}
