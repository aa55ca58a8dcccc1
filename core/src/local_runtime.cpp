// Start-up and shutdown of the one-place runtime.
#include "apgas/local_runtime.hpp"

#include "apgas/detail/topology.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace apgas {

namespace {
// The one live runtime. acq_rel on the exchange: a runtime created after another was
// destroyed sees that destruction complete.
std::atomic<local_runtime*> g_current{nullptr};
} // namespace

local_runtime::local_runtime(int& argc, char** argv)
    : local_runtime(options::from_env_and_args(argc, argv)) {}

local_runtime::local_runtime(const options& opts) {
  local_runtime* expected = nullptr;
  if (!g_current.compare_exchange_strong(expected, this, std::memory_order_acq_rel))
    throw std::logic_error("apgas: a runtime already exists in this process");
  detail::g_default_policy = opts.default_policy; // before any worker starts
  detail::g_adaptive_bound = opts.adaptive_bound;
  m_sched = std::make_unique<detail::scheduler>(opts);
  if (opts.progress_ms != 0) m_progress = std::thread([this] { progress_loop(); });
}

local_runtime::~local_runtime() {
  stop_progress();
  m_sched->stop();
  if (m_sched->opts().stats) print_stats();
  write_trace();
  m_sched.reset();
  // release: the next runtime's exchange (acq_rel) sees this one's teardown complete.
  g_current.store(nullptr, std::memory_order_release);
}

void local_runtime::write_trace() {
  detail::trace_session* trace = m_sched->trace();
  if (trace == nullptr || std::exchange(m_trace_written, true)) return;
  unsigned here = 0;
  unsigned places = 1;
  {
    std::lock_guard guard(m_progress_mutex); // the label's lock (see set_place_label)
    here = m_place;
    places = m_places;
  }
  trace->write_place_file(here);
  if (places == 1) (void)trace->merge(1);
}

void local_runtime::stop_progress() {
  if (!m_progress.joinable()) return;
  {
    std::lock_guard guard(m_progress_mutex);
    m_progress_stop = true;
  }
  m_progress_cv.notify_all();
  m_progress.join();
}

void local_runtime::progress_loop() {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto interval = std::chrono::milliseconds(m_sched->opts().progress_ms);
  auto last_time = start;
  std::uint64_t last_spawns = 0;
  std::unique_lock lock(m_progress_mutex);
  for (;;) {
    // A timed wait on a condition variable: the destructor ends it at once.
    if (m_progress_cv.wait_for(lock, interval, [this] { return m_progress_stop; })) return;
    const auto now = clock::now();
    const detail::worker_counters c = m_sched->published_totals();
    const double seconds = std::chrono::duration<double>(now - start).count();
    const double window = std::chrono::duration<double>(now - last_time).count();
    const double rate = window > 0 ? static_cast<double>(c.spawns - last_spawns) / window : 0.0;
    last_time = now;
    last_spawns = c.spawns;
    std::string line = fmt::format(
        "apgas progress: place {} of {}, {:.2f} s: {} spawns ({:.1f} M/s), {} steals, {} parks, "
        "{} injected",
        m_place, m_places, seconds, c.spawns, rate / 1e6, c.steals, c.parks, c.injected);
    if (m_progress_extra) {
      const std::string extra = m_progress_extra();
      if (!extra.empty()) line += "; " + extra;
    }
    line += '\n';
    std::fputs(line.c_str(), stderr);
  }
}

// acquire: pairs with the constructor's exchange, so the caller sees the runtime constructed.
local_runtime* local_runtime::current() noexcept {
  return g_current.load(std::memory_order_acquire);
}

void local_runtime::print_stats() const {
  const auto per_worker = m_sched->counters();
  std::string out = fmt::format(
      "apgas statistics: place {} of {}, {} worker(s), policy {}, {}\n", m_place, m_places,
      per_worker.size(), to_string(opts().default_policy), detail::topology::instance().describe());
  const auto row = [&out](const auto& name, const detail::worker_counters& c) {
    out += fmt::format("{:>8} {:>14} {:>14} {:>12} {:>12} {:>8} {:>9}\n", name, c.spawns,
                       c.steal_attempts, c.steals, c.shared, c.parks, c.injected);
  };
  out += fmt::format("{:>8} {:>14} {:>14} {:>12} {:>12} {:>8} {:>9}\n", "worker", "spawns",
                     "steal-tries", "steals", "shared", "parks", "injected");
  detail::worker_counters total;
  for (std::size_t i = 0; i < per_worker.size(); ++i) {
    const auto& c = per_worker[i];
    row(i, c);
    total.spawns += c.spawns;
    total.steal_attempts += c.steal_attempts;
    total.steals += c.steals;
    total.shared += c.shared;
    total.parks += c.parks;
    total.injected += c.injected;
  }
  row("total", total);
  std::fputs(out.c_str(), stderr);
}

} // namespace apgas
