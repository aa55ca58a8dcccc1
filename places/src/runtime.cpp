// Start-up and shutdown of a place: MPI (when launched by mpirun), workers, the message dispatcher
// and its protocol modules.
#include "apgas/runtime.hpp"

#include "apgas/detail/exception_codec.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/place_modules.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/message_counts.hpp"

#include "build_identity.hpp"
#include "fatal_exits.hpp"
#include "mpi_process.hpp"
#include "mpi_transport.hpp"
#include "run_protocol.hpp"
#include "single_place_transport.hpp"
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace apgas {

/// MPI_Init_thread .. MPI_Finalize, if the program had not initialised MPI itself: an MPI
/// program that starts the runtime inside its own MPI session keeps it (and may start another
/// runtime later), as with any library that uses MPI without owning it.
struct runtime::mpi_session {
  explicit mpi_session(int* argc, char*** argv) : m_owned(!detail::mpi_initialized()) {
    detail::mpi_init(argc, argv);
  }
  ~mpi_session() {
    if (m_owned) detail::mpi_finalize();
  }
  /// Collective: ends every place with exit code `code` at start-up, once all have printed
  /// why. mpiexec stops the other places at the first non-zero exit code it sees, so no place
  /// may exit before the ones that speak have (the barrier). pre: no transport.
  [[noreturn]] static void end_job(std::unique_ptr<mpi_session> session, int code) {
    std::fflush(nullptr);
    detail::mpi_world_barrier();
    if (!session->m_owned) detail::mpi_abort(code); // not ours to finalize
    session.reset(); // every place finalizes: mpiexec then reports exit codes, not a crash
    std::exit(code);
  }
  bool m_owned;
};

namespace {

/// Each place whose build differs from place 0's says where it runs, so that the stale copy
/// can be found; place 0 names every build and its places.
void report_build_mismatch(place_id here, const std::vector<std::uint64_t>& builds,
                           const std::string& summary) {
  if (here == 0) std::fprintf(stderr, "%s\n", summary.c_str());
  if (builds[here] == builds[0]) return;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::fprintf(
      stderr, "apgas: place %u (on %s) runs %s, build %016llx, not place 0's build %016llx\n", here,
      host.data(), detail::build_path().c_str(), static_cast<unsigned long long>(builds[here]),
      static_cast<unsigned long long>(builds[0]));
}

} // namespace

namespace {

/// Place 0's steady clock minus ours, how far off that may be, and a common origin (on place
/// 0's clock), for the trace. Round k: every place reads its clock (s), all-gathers, place 0
/// reads its clock (r0) after that first gather completed, which needed our s; a second gather
/// brings r0 here, and we read our clock (a) after it. So s < r0 - offset < a: the offset lies
/// in [r0 - a, r0 - s]. The narrowest of k_rounds intervals is kept, its middle the estimate
/// and its half-width the error (a few microseconds on one node).
struct trace_clock {
  std::int64_t offset_ns = 0;
  std::int64_t error_ns = 0;
  std::int64_t origin_ns = 0;
};

trace_clock measure_trace_clock(detail::transport& net) {
  constexpr int k_rounds = 8;
  trace_clock best;
  std::int64_t best_width = -1;
  for (int k = 0; k < k_rounds; ++k) {
    const std::int64_t s = detail::trace_now();
    (void)net.all_gather(static_cast<std::uint64_t>(s));
    const std::int64_t r = detail::trace_now();
    const auto r0 = static_cast<std::int64_t>(net.all_gather(static_cast<std::uint64_t>(r))[0]);
    const std::int64_t a = detail::trace_now();
    if (k == 0) best.origin_ns = r0; // the same at every place
    if (net.here() == 0) continue;   // place 0 is the reference: offset 0, exactly
    if (best_width < 0 || a - s < best_width) {
      best_width = a - s;
      best.offset_ns = r0 - s - (a - s) / 2;
      best.error_ns = (a - s + 1) / 2;
    }
  }
  return best;
}

/// This process's rank as its MPI launcher numbered it (before MPI is initialised), or 0:
/// messages about the command line are printed once, by place 0.
unsigned launcher_rank() noexcept {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(name))
      return static_cast<unsigned>(std::strtoul(v, nullptr, 10));
  return 0;
}

/// True if argv asks for help (before `--`, after which everything is the program's).
bool asks_for_help(int argc, char** argv) noexcept {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

/// The options of the environment and of argv (if any), and what is wrong with them ("" if
/// nothing). --help ends the process here (exit 0, printed at place 0 alone). Warns about
/// APGAS_* variables that are no option.
struct command_line {
  options opts;
  std::string bad_usage; ///< the line a bad flag or value gets, or ""
};

command_line read_command_line(int* argc, char** argv) {
  const bool speaks = launcher_rank() == 0;
  if (argc != nullptr && asks_for_help(*argc, argv)) {
    if (speaks)
      std::fprintf(
          stdout,
          "%s: an apgas program.\nThe runtime takes these flags out of its command line "
          "(before any `--`)\nand reads these variables; a flag wins over a variable.\n\n%s",
          argv[0], options::help_text().c_str());
    std::fflush(stdout);
    std::exit(0); // every place, and exit code 0 makes mpiexec stop none of them early
  }
  command_line line;
  try {
    line.opts = argc != nullptr ? options::from_env_and_args(*argc, argv) : options::from_env();
  } catch (const usage_error& e) {
    line.bad_usage = fmt::format("apgas: {} (--help lists the options)", e.what());
    return line;
  }
  if (speaks) {
    for (const std::string& name : options::unknown_variables())
      std::fprintf(stderr, "apgas: warning: %s is not an apgas option (--help lists them)\n",
                   name.c_str());
    if (argc != nullptr)
      for (const std::string& flag : options::near_miss_flags(*argc, argv))
        std::fprintf(stderr,
                     "apgas: warning: %s is not an apgas option; it is left to the program "
                     "(after --, it is not checked)\n",
                     flag.c_str());
  }
  return line;
}

} // namespace

runtime::runtime(int& argc, char** argv) {
  const command_line line = read_command_line(&argc, argv);
  start(line.opts, line.bad_usage, &argc, &argv);
}

runtime::runtime() {
  const command_line line = read_command_line(nullptr, nullptr);
  start(line.opts, line.bad_usage, nullptr, nullptr);
}

runtime::runtime(const options& opts) { start(opts, std::string(), nullptr, nullptr); }

void runtime::start(const options& opts, const std::string& bad_usage, int* argc, char*** argv) {
  std::unique_ptr<detail::transport> net;
  if (detail::mpi_launched()) {
    m_mpi = std::make_unique<mpi_session>(argc, argv);
    end_job_if_any_place_has(bad_usage);
    net = detail::make_mpi_transport(opts);
  } else {
    if (!bad_usage.empty()) {
      std::fprintf(stderr, "%s\n", bad_usage.c_str());
      std::exit(2);
    }
    net = detail::make_single_place_transport(opts);
  }
  // Before any message: a function travels as an offset in the binary.
  const std::vector<std::uint64_t> builds = net->all_gather(detail::build_identity());
  if (const std::string mismatch = detail::describe_build_mismatch(builds); !mismatch.empty()) {
    report_build_mismatch(net->here(), builds, mismatch);
    net.reset();
    mpi_session::end_job(std::move(m_mpi), 1); // builds differ: there are several places
  }
  m_fatal_exit_handlers = std::make_unique<detail::fatal_exit_handlers>(net->here());
  // Before the workers start, so that their first events are on the common clock.
  const trace_clock clock = opts.trace.empty() ? trace_clock{} : measure_trace_clock(*net);
  m_local = std::make_unique<local_runtime>(opts);
  if (detail::trace_session* trace = m_local->sched().trace())
    trace->set_clock(clock.offset_ns, clock.error_ns, clock.origin_ns);
  m_dispatcher = std::make_unique<detail::message_dispatcher>(m_local->sched(), std::move(net));
  const detail::place_modules modules = detail::add_place_modules(*m_dispatcher, opts);
  m_runs = modules.runs;
  detail::message_dispatcher::set_current(m_dispatcher.get());
  detail::active_messages::set_current(modules.messages);
  m_local->sched().set_network(m_dispatcher.get());
  m_local->set_place_label(here(), places());
  m_local->set_progress_extra([dispatcher = m_dispatcher.get()] {
    std::string s;
    if (dispatcher->places() > 1) {
      const message_counts c = local_message_counts(); // relaxed reads: any thread
      s = fmt::format("messages out {} ({} MPI), in {}; activities sent {}, finish reports {}",
                      c.logical_messages_sent, c.mpi_messages_sent, c.logical_messages_received,
                      c.activities_sent, c.finish_reports_sent);
    }
    const std::string modules = dispatcher->progress_text(); // GLB's items per second, ...
    if (!modules.empty()) s += (s.empty() ? "" : "; ") + modules;
    return s;
  });
  detail::message_dispatcher::install_dump_signal();
  m_dispatcher->barrier(); // every place is ready before any sends work
}

void runtime::end_job_if_any_place_has(const std::string& bad_usage) {
  // A place that ended on its own, before MPI, would make mpiexec stop the others, sometimes
  // place 0 before it had said why: the places decide together, and the lowest place with a
  // bad command line speaks (place 0 when all share one).
  const std::optional<unsigned> speaker = detail::mpi_lowest_rank_with(!bad_usage.empty());
  if (!speaker) return; // nothing wrong anywhere
  if (*speaker == detail::mpi_world_rank()) std::fprintf(stderr, "%s\n", bad_usage.c_str());
  mpi_session::end_job(std::move(m_mpi), 2);
}

runtime::~runtime() {
  try {
    m_dispatcher->barrier(); // every place left its last run: nothing is in flight
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: shutdown barrier failed: %s\n", here(), e.what());
  }
  const bool stats = m_local->opts().stats;
  // One place sends no message: its table would be all zeros. The modules' statistics (clocks,
  // load balancing) follow it.
  std::string table = stats && places() > 1 ? message_stats() : std::string();
  if (stats) table += m_dispatcher->describe_stats();
  m_local->sched().stop();
  if (detail::trace_session* trace = m_local->sched().trace()) {
    // Every place writes its file; place 0 joins them once all have (the barrier).
    trace->set_message_kinds(m_dispatcher->kind_names());
    m_local->write_trace();
    try {
      m_dispatcher->barrier();
      if (here() == 0 && places() > 1) (void)trace->merge(places()); // one place: done
    } catch (const std::exception& e) {
      std::fprintf(stderr, "apgas: place %u: trace barrier failed: %s\n", here(), e.what());
    }
  }
  m_local->sched().set_network(nullptr);
  m_local.reset(); // prints the worker table if asked
  if (stats) std::fputs(table.c_str(), stderr);
  detail::active_messages::set_current(nullptr);
  detail::message_dispatcher::set_current(nullptr);
  m_dispatcher.reset();
  m_mpi.reset();
  m_fatal_exit_handlers.reset();
}

void runtime::end_run(std::span<const std::byte> value) { m_runs->announce_run_end(true, value); }

void runtime::fail_run(std::exception_ptr error) {
  m_runs->announce_run_end(false, detail::encode_exception(error, here()));
}

std::vector<std::byte> runtime::wait_run_end() {
  detail::run_end end = m_runs->await_run_end();
  if (!end.ok) std::rethrow_exception(detail::decode_exception(end.payload, places()));
  return std::move(end.payload);
}

place_id runtime::here() const noexcept { return m_dispatcher->here(); }
place_id runtime::places() const noexcept { return m_dispatcher->places(); }
void runtime::set_coalescing(bool on) { m_dispatcher->set_coalescing(on); }
std::uint64_t runtime::mpi_messages_sent() const {
  return local_message_counts().mpi_messages_sent;
}
std::uint64_t runtime::cleanups_sent() const { return local_message_counts().finish_cleanups_sent; }
std::uint64_t runtime::reports_sent() const { return local_message_counts().finish_reports_sent; }
std::uint64_t runtime::asks_sent() const { return local_message_counts().finish_asks_sent; }
std::uint64_t runtime::holds_expired() const { return local_message_counts().finish_holds_expired; }

std::string runtime::message_stats() const {
  const message_counts c = local_message_counts();
  const auto t = m_dispatcher->transport_counters(); // what the snapshot does not sum up
  const double ratio = c.mpi_messages_sent == 0 ? 0.0
                                                : static_cast<double>(c.logical_messages_sent) /
                                                      static_cast<double>(c.mpi_messages_sent);
  std::string s = fmt::format("apgas messages: place {} of {}\n", here(), places());
  s += fmt::format("  {:<34} {}\n", "activities sent (async_at, at)", c.activities_sent);
  s += fmt::format("  {:<34} {}\n", "at replies sent", c.at_replies_sent);
  s += fmt::format("  {:<34} {} reports ({} unasked, hold expired), {} asks, {} cleanups\n",
                   "finish control messages", c.finish_reports_sent, c.finish_holds_expired,
                   c.finish_asks_sent, c.finish_cleanups_sent);
  s += fmt::format("  {:<34} {}\n", "finishes that went remote", c.distributed_finishes);
  s += fmt::format("  {:<34} {} logical in {} MPI messages ({:.1f} per message)\n", "sent",
                   c.logical_messages_sent, c.mpi_messages_sent, ratio);
  s += fmt::format("  {:<34} {} logical in {} MPI messages (a merged stream counts once)\n",
                   "received", c.logical_messages_received, c.mpi_messages_received);
  s += fmt::format("  {:<34} {} sent, {} received\n", "bytes", c.bytes_sent, c.bytes_received);
  s += fmt::format("  {:<34} {}\n", "back-pressure waits", c.backpressure_waits);
  if (places() > opts().route_above)
    s += fmt::format("  {:<34} {} (--route-above {}: messages between two other places)\n",
                     "messages forwarded", c.messages_forwarded, opts().route_above);
  if (places() > opts().route_above)
    s += fmt::format("  {:<34} {} (for places outside this one's row and column)\n",
                     "aggregated updates relayed", c.updates_relayed);
  s += fmt::format("  {:<34} {}\n", "MPI sends in flight, at most", t.peak_sends_in_flight);
  s += fmt::format("  {:<34} {} bytes per destination{}\n", "coalescing buffer", t.buffer_bytes,
                   t.buffer_bytes < opts().coalesce_bytes
                       ? fmt::format(" (--coalesce-bytes {}, lowered to fit "
                                     "--coalesce-memory-mib at {} places)",
                                     opts().coalesce_bytes, places())
                       : std::string());
  return s;
}

} // namespace apgas
