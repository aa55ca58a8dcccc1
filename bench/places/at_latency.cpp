// bench_at_latency: the round trip of `at` from place 0 to place 1 against a raw MPI ping-pong
// (MPI_Send/MPI_Recv on MPI_COMM_WORLD) of the same payload, in the same run. A second table
// splits the difference: a ping-pong made of the MPI calls the transport makes (see
// transport_pattern) tells the cost of that way of using MPI from the runtime's own path.
//
//   mpiexec -n 2 ... bench_at_latency [--iters N] [--warmup W] [--sizes 8,1024,65536]
//                                     [--raw-phase before|between] [--mpi-thread
//                                     serialized|multiple]
//                                     [--target 1.5] [--watchdog-s 300] [--rounds 5]
//                                     [runtime flags: --threads N --coalesce yes|no --flush-us N
//                                     ...]
//
// Both sides move the payload both ways: the ping-pong echoes the buffer, the `at` body returns
// the vector it was given. Every echo is checked (outside the timed part). At 8 bytes a last
// table adds an `at` of one number, which allocates and frames no vector.
//
// --rounds R (default 5): raw ping-pongs and `at` round trips take turns R times, a new
// runtime each round, iters/R iterations each time (the machine's speed drifts).
//
// --raw-phase before (default): the ping-pong runs before the runtime exists (see common.hpp:
// the runtime's idle workers use MPI at any time, so a concurrent MPI call from main is illegal
// at MPI_THREAD_SERIALIZED). --raw-phase between runs it between two run() calls instead, as
// if the main thread were free to use MPI then; with --mpi-thread multiple that is legal.
#include "common.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

namespace {

using namespace apgas_bench;

/// Stamps a payload with the iteration, so that a stale or mixed-up echo cannot pass the check.
void stamp(std::vector<std::uint64_t>& v, std::uint64_t i) {
  v.front() = i;
  v.back() = ~i;
}

/// A ping-pong of `bytes` between ranks 0 and 1 made of send(v, to) and receive(v, from):
/// rank 0 sends, rank 1 echoes, other ranks only join the barriers. Every echo is checked.
/// @return per-iteration round-trip times in seconds (rank 0; empty elsewhere).
template <class Send, class Receive>
std::vector<double> ping_pong(const char* what, std::size_t bytes, int iters, int warmup, Send send,
                              Receive receive) {
  const int me = world_rank();
  std::vector<std::uint64_t> buf(bytes / 8, 0x5a5a5a5a5a5a5a5aULL);
  std::vector<std::uint64_t> sent = buf;
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(iters));
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = -warmup; i < iters; ++i) {
    if (me == 0) {
      stamp(sent, static_cast<std::uint64_t>(i + warmup));
      std::memcpy(buf.data(), sent.data(), bytes);
      const auto t0 = clock::now();
      send(buf, 1);
      receive(buf, 1);
      const double dt = seconds_since(t0);
      if (i >= 0) samples.push_back(dt);
      if (buf != sent) fail(fmt::format("{}: wrong echo at iteration {}", what, i));
    } else if (me == 1) {
      receive(buf, 0);
      send(buf, 0);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return samples;
}

/// The raw-MPI peer: MPI_Send and MPI_Recv on MPI_COMM_WORLD.
std::vector<double> raw_ping_pong(std::size_t bytes, int iters, int warmup) {
  const int count = static_cast<int>(bytes);
  constexpr int tag = 7;
  return ping_pong(
      "raw ping-pong", bytes, iters, warmup,
      [&](std::vector<std::uint64_t>& v, int to) {
        MPI_Send(v.data(), count, MPI_BYTE, to, tag, MPI_COMM_WORLD);
      },
      [&](std::vector<std::uint64_t>& v, int from) {
        MPI_Recv(v.data(), count, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      });
}

/// The MPI floor of the runtime's transport: the calls it makes for an `at` and its reply,
/// without the runtime around them. Receives from any source, of the transport's posted size,
/// posted in a ring and polled with MPI_Test (a slot taken is posted again at the next poll);
/// sends by MPI_Isend and one MPI_Test (an incomplete send is tested again at each poll). On a
/// communicator of its own, as the runtime's. The gap between this and the raw ping-pong is
/// the cost of that way of using MPI; the gap between this and `at` is the runtime's own path.
class transport_pattern {
public:
  transport_pattern() {
    MPI_Comm_dup(MPI_COMM_WORLD, &m_comm);
    for (std::size_t i = 0; i < k_slots; ++i) {
      m_buffers[i].resize(k_posted_bytes);
      post(i);
    }
  }
  transport_pattern(const transport_pattern&) = delete;
  transport_pattern& operator=(const transport_pattern&) = delete;
  ~transport_pattern() {
    for (MPI_Request& r : m_receives) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(static_cast<int>(m_sends.size()), m_sends.data(), MPI_STATUSES_IGNORE);
    MPI_Comm_free(&m_comm);
  }

  void send(const std::vector<std::uint64_t>& v, int to) {
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Isend(v.data(), static_cast<int>(v.size() * 8), MPI_BYTE, to, 0, m_comm, &r);
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done == 0) m_sends.push_back(r);
  }

  /// Polls until the next message arrives, and copies it into `v`.
  void receive(std::vector<std::uint64_t>& v) {
    for (;;) {
      for (; m_unposted > 0; --m_unposted) post((m_next + k_slots - m_unposted) % k_slots);
      if (!m_sends.empty()) complete_sends();
      int flag = 0;
      MPI_Status status;
      MPI_Test(&m_receives[m_next], &flag, &status);
      if (flag == 0) continue;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (static_cast<std::size_t>(count) != v.size() * 8)
        fail(fmt::format("transport pattern: {} bytes received, {} expected", count, v.size() * 8));
      std::memcpy(v.data(), m_buffers[m_next].data(), v.size() * 8);
      ++m_unposted;
      m_next = (m_next + 1) % k_slots;
      return;
    }
  }

private:
  /// As the transport's (mpi_transport.cpp): 4 posted receives of 128 KiB.
  static constexpr std::size_t k_slots = 4;
  static constexpr std::size_t k_posted_bytes = std::size_t{128} * 1024;

  void post(std::size_t i) {
    MPI_Irecv(m_buffers[i].data(), static_cast<int>(k_posted_bytes), MPI_BYTE, MPI_ANY_SOURCE,
              MPI_ANY_TAG, m_comm, &m_receives[i]);
  }
  void complete_sends() {
    std::vector<int> done(m_sends.size());
    int count = 0;
    MPI_Testsome(static_cast<int>(m_sends.size()), m_sends.data(), &count, done.data(),
                 MPI_STATUSES_IGNORE);
    if (count > 0) std::erase(m_sends, MPI_REQUEST_NULL);
  }

  MPI_Comm m_comm = MPI_COMM_NULL;
  std::array<std::vector<std::byte>, k_slots> m_buffers;
  std::array<MPI_Request, k_slots> m_receives{};
  std::size_t m_next = 0;
  std::size_t m_unposted = 0;
  std::vector<MPI_Request> m_sends;
};

/// The transport pattern's ping-pong: as raw_ping_pong, with transport_pattern's calls.
std::vector<double> pattern_ping_pong(std::size_t bytes, int iters, int warmup) {
  transport_pattern net; // collective (MPI_Comm_dup)
  return ping_pong(
      "transport pattern", bytes, iters, warmup,
      [&](const std::vector<std::uint64_t>& v, int to) { net.send(v, to); },
      [&](std::vector<std::uint64_t>& v, int /*from: any*/) { net.receive(v); });
}

/// What the apgas side measured for one payload size.
struct at_samples {
  std::vector<double> seconds; ///< per round trip
  double logical_per_rt = 0;   ///< logical messages per round trip, all places
  double mpi_per_rt = 0;       ///< MPI messages per round trip, all places

  template <class A>
  void serialize(A& a) { // run() hands it to every place
    a& seconds& logical_per_rt& mpi_per_rt;
  }
};

/// The echo as a free function: `at` then sends a pointer to it (8 bytes more, and a check of
/// the function's offset where it arrives).
std::vector<std::uint64_t> echo(std::vector<std::uint64_t> v) { return v; }

/// What `at` is given: a lambda (named by its type) or a pointer to a free function, both
/// echoing a vector; or a lambda echoing one 8-byte number (`scalar`: no vector to allocate or
/// to frame with its length, 8-byte payloads only).
enum class callee { lambda, function_pointer, scalar };

/// The apgas side: place 0 awaits `at(1, echo)` in a loop. Collective (every place calls it).
at_samples at_round_trips(apgas::runtime& rt, std::size_t bytes, int iters, int warmup,
                          callee how = callee::lambda) {
  return rt.run([&]() -> apgas::task<at_samples> {
    std::vector<std::uint64_t> payload(bytes / 8, 0x5a5a5a5a5a5a5a5aULL);
    at_samples out;
    std::vector<double>& samples = out.seconds;
    samples.reserve(static_cast<std::size_t>(iters));
    // Messages per round trip: counted over the timed iterations; gathering costs a fixed
    // number of messages, measured by two gathers in a row and subtracted.
    const apgas::message_counts g0 = co_await apgas::total_message_counts();
    const apgas::message_counts noise = co_await apgas::total_message_counts() - g0;
    apgas::message_counts before;
    for (int i = -warmup; i < iters; ++i) {
      if (i == 0) before = co_await apgas::total_message_counts();
      stamp(payload, static_cast<std::uint64_t>(i + warmup));
      const auto t0 = clock::now();
      std::vector<std::uint64_t> back;
      if (how == callee::lambda)
        back = co_await apgas::at(
            1, [](std::vector<std::uint64_t> v) { return v; }, payload);
      else if (how == callee::function_pointer) back = co_await apgas::at(1, echo, payload);
      else
        back.assign(1, co_await apgas::at(
                           1, [](std::uint64_t v) { return v; }, payload.front()));
      const double dt = seconds_since(t0);
      if (i >= 0) samples.push_back(dt);
      if (back != payload) fail(fmt::format("at: wrong echo at iteration {}", i));
    }
    const apgas::message_counts m = co_await apgas::total_message_counts() - before - noise;
    out.logical_per_rt = static_cast<double>(m.logical_messages_sent) / iters;
    out.mpi_per_rt = static_cast<double>(m.mpi_messages_sent) / iters;
    co_return out;
  });
}

std::vector<std::size_t> parse_sizes(const std::string& text) {
  std::vector<std::size_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::size_t b = std::stoull(item);
    if (b < 8 || b % 8 != 0) {
      std::fprintf(stderr, "--sizes: each size must be a multiple of 8 bytes, got %zu\n", b);
      std::exit(2);
    }
    out.push_back(b);
  }
  return out;
}

std::string human_bytes(std::size_t b) {
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b / 1024);
  return fmt::format("{} B", b);
}

} // namespace

int main(int argc, char** argv) {
  // The runtime's flags first: runtime_options consumes them, the rest are ours.
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const int iters = f.get("--iters", 2000);
  const int warmup = f.get("--warmup", 200);
  const auto sizes = parse_sizes(f.get<std::string>("--sizes", "8,1024,65536"));
  const std::string raw_phase = f.get<std::string>("--raw-phase", "before");
  const std::string mpi_thread = f.get<std::string>("--mpi-thread", "serialized");
  const double target = f.get("--target", 1.5);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  const int rounds = f.get("--rounds", 5);
  f.done();
  if (rounds < 1 || iters < rounds) {
    std::fprintf(stderr, "--rounds must be at least 1 and at most --iters\n");
    return 2;
  }
  if ((raw_phase != "before" && raw_phase != "between") ||
      (mpi_thread != "serialized" && mpi_thread != "multiple")) {
    std::fprintf(stderr, "--raw-phase before|between, --mpi-thread serialized|multiple\n");
    return 2;
  }
  const int level =
      init_mpi(argc, argv, mpi_thread == "multiple" ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED);
  if (world_size() < 2) fail("needs at least 2 MPI ranks (mpiexec -n 2)");

  // Rounds: raw ping-pongs, then a runtime and its `at` round trips, R times, each with
  // iters/R iterations (after its own warm-up). The machine's speed drifts over seconds (this
  // VM's cores more than most); taking turns puts both sides in the same conditions.
  const int per_round = iters / rounds;
  std::vector<std::vector<double>> raw(sizes.size());
  std::vector<std::vector<double>> pattern(sizes.size()); // transport_pattern's ping-pong
  std::vector<at_samples> at(sizes.size());
  std::vector<at_samples> at_pointer(sizes.size()); // `at` of a function pointer
  std::vector<double> at_scalar;                    // `at` of one 8-byte number
  apgas::place_id here = 0;
  std::string description;
  const auto append = [](std::vector<double>& to, const std::vector<double>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  // The two MPI peers of size k, one after the other.
  const auto run_peers = [&](std::size_t k) {
    append(raw[k], raw_ping_pong(sizes[k], per_round, warmup));
    append(pattern[k], pattern_ping_pong(sizes[k], per_round, warmup));
  };
  for (int round = 0; round < rounds; ++round) {
    if (raw_phase == "before")
      for (std::size_t k = 0; k < sizes.size(); ++k) run_peers(k);
    apgas::runtime rt(opts); // leaves MPI initialised: init_mpi's, not its own
    watchdog dog(rt, watchdog_s);
    here = rt.here();
    description = describe(rt, level);
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      watchdog::phase() = "at round trips";
      const at_samples s = at_round_trips(rt, sizes[k], per_round, warmup);
      append(at[k].seconds, s.seconds);
      at[k].logical_per_rt += s.logical_per_rt / rounds;
      at[k].mpi_per_rt += s.mpi_per_rt / rounds;
      watchdog::phase() = "at round trips of a function pointer";
      append(at_pointer[k].seconds,
             at_round_trips(rt, sizes[k], per_round, warmup, callee::function_pointer).seconds);
      if (sizes[k] == 8) {
        watchdog::phase() = "at round trips of a number";
        append(at_scalar, at_round_trips(rt, 8, per_round, warmup, callee::scalar).seconds);
      }
      watchdog::phase() = "between runs";
      // Between runs: every place's main thread is out of run() (place 0 may be a little
      // ahead, which blocking MPI calls tolerate), but the workers still poll MPI.
      if (raw_phase == "between") run_peers(k);
    }
  }

  if (here == 0) {
    fmt::print("bench_at_latency: at(1, echo) round trip against MPI_Send/MPI_Recv ping-pong\n");
    fmt::print("  {}\n", description);
    fmt::print("  {} iterations per size in {} rounds (each after {} warm-up); raw MPI measured "
               "{}\n\n",
               per_round * rounds, rounds, warmup,
               raw_phase == "before" ? "before each round's runtime was created"
                                     : "between run() calls");
    fmt::print("| payload | raw median us | raw p90 us | at median us | at p90 us | ratio median | "
               "ratio p90 | msgs/at (MPI) |\n");
    fmt::print("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    bool pass = true;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const summary r = summarize(raw[k]);
      const summary a = summarize(at[k].seconds);
      const double ratio = a.median / r.median;
      pass = pass && ratio <= target;
      fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} ({:.2f}) |\n",
                 human_bytes(sizes[k]), r.median * 1e6, r.p90 * 1e6, a.median * 1e6, a.p90 * 1e6,
                 ratio, a.p90 / r.p90, at[k].logical_per_rt, at[k].mpi_per_rt);
    }
    fmt::print("\ntarget: at median <= {:.1f} x raw median at every size: {}\n", target,
               pass ? "PASS" : "MISS");
    // The same medians split in two: what the transport's way of calling MPI costs over the
    // ping-pong (measured by transport_pattern, in the same rounds), and what the runtime's
    // own path adds on top (serializing, handlers, scheduling, the awaiting coroutine).
    fmt::print(
        "\nwhere the time goes (medians, us): the transport's MPI calls alone (posted "
        "receives polled with MPI_Test, MPI_Isend + MPI_Test), then the runtime's own path\n\n");
    fmt::print(
        "| payload | raw | transport's MPI calls | at | MPI calls over raw | runtime over MPI "
        "calls |\n");
    fmt::print("|---:|---:|---:|---:|---:|---:|\n");
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const double r = summarize(raw[k]).median;
      const double p = summarize(pattern[k]).median;
      const double a = summarize(at[k].seconds).median;
      fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:+.2f} ({:.2f} x) | {:+.2f} |\n",
                 human_bytes(sizes[k]), r * 1e6, p * 1e6, a * 1e6, (p - r) * 1e6, p / r,
                 (a - p) * 1e6);
    }
    fmt::print("\n`at` of a pointer to a free function against `at` of a lambda (medians, us)\n\n");
    fmt::print("| payload | lambda | function pointer | pointer over lambda |\n");
    fmt::print("|---:|---:|---:|---:|\n");
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const double a = summarize(at[k].seconds).median;
      const double f = summarize(at_pointer[k].seconds).median;
      fmt::print("| {} | {:.2f} | {:.2f} | {:.3f} |\n", human_bytes(sizes[k]), a * 1e6, f * 1e6,
                 f / a);
    }
    const auto eight = std::find(sizes.begin(), sizes.end(), std::size_t{8});
    if (eight != sizes.end()) {
      const std::size_t k = static_cast<std::size_t>(eight - sizes.begin());
      const double r = summarize(raw[k]).median;
      const double a = summarize(at[k].seconds).median;
      const double n = summarize(at_scalar).median;
      fmt::print("\n`at` of one 8-byte number (no vector) against the raw ping-pong of 8 bytes "
                 "(medians, us)\n\n");
      fmt::print("| raw | `at` of a vector | `at` of a number | number over raw |\n");
      fmt::print("|---:|---:|---:|---:|\n");
      fmt::print("| {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", r * 1e6, a * 1e6, n * 1e6, n / r);
    }
    std::fflush(stdout);
  }
  return 0;
}
