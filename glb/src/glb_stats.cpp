// GLB's parameters (from the options table), run ids, and the statistics table.
#include "apgas/glb.hpp"
#include "apgas/local_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace apgas::glb {

parameters parameters::from(const options& o) noexcept {
  parameters p;
  p.items_per_batch = o.glb_n;
  p.random_steals = o.glb_w;
  p.lifeline_base = o.glb_l;
  p.lifeline_count = o.glb_z;
  p.random_victims = o.glb_m;
  p.tree = o.glb_tree;
  p.checkpoint_dir = o.checkpoint;
  p.checkpoint_every = o.checkpoint_every;
  p.resume_from = o.resume;
  return p;
}

parameters parameters::resolved(std::uint32_t places) const noexcept {
  parameters p = *this;
  p.items_per_batch = std::max(p.items_per_batch, 1U);
  p.lifeline_base = std::max(p.lifeline_base, 2U);
  p.random_victims = std::max(p.random_victims, 1U);
  if (p.lifeline_count == 0)
    p.lifeline_count = apgas::detail::glb::lifeline_dimensions(places, p.lifeline_base);
  if (p.random_steals == 0) p.random_steals = p.lifeline_count;
  return p;
}

parameters default_parameters() {
  const local_runtime* rt = local_runtime::current();
  return rt != nullptr ? parameters::from(rt->opts()) : parameters{};
}

place_stats& place_stats::operator+=(const place_stats& o) noexcept {
  items += o.items;
  steals_attempted += o.steals_attempted;
  steals_successful += o.steals_successful;
  steals_received += o.steals_received;
  steals_served += o.steals_served;
  lifeline_requests_sent += o.lifeline_requests_sent;
  lifeline_requests_received += o.lifeline_requests_received;
  lifeline_activations += o.lifeline_activations;
  lifeline_loot_sent += o.lifeline_loot_sent;
  loot_sent_items += o.loot_sent_items;
  loot_sent_bytes += o.loot_sent_bytes;
  loot_received_items += o.loot_received_items;
  loot_received_bytes += o.loot_received_bytes;
  local_splits += o.local_splits;
  busy_seconds += o.busy_seconds;
  idle_seconds += o.idle_seconds;
  return *this;
}

place_stats run_stats::total() const noexcept {
  place_stats t;
  for (const place_stats& p : places) t += p;
  t.place = static_cast<std::uint32_t>(places.size());
  return t;
}

double run_stats::imbalance() const noexcept {
  if (places.empty()) return 1.0;
  std::uint64_t most = 0;
  std::uint64_t sum = 0;
  for (const place_stats& p : places) {
    most = std::max(most, p.items);
    sum += p.items;
  }
  if (sum == 0) return 1.0;
  return static_cast<double>(most) * static_cast<double>(places.size()) / static_cast<double>(sum);
}

namespace {

std::string row(const std::string& name, const place_stats& p, std::uint64_t all_items) {
  const double share =
      all_items == 0 ? 0.0 : 100.0 * static_cast<double>(p.items) / static_cast<double>(all_items);
  return fmt::format(
      "  {:>6} {:>13} {:>6.1f}% {:>8}/{:<7} {:>8}/{:<7} {:>6}/{:<6} {:>6} {:>6} {:>12}/{:<9.1f} "
      "{:>12}/{:<9.1f} {:>7} {:>8.3f}\n",
      name, p.items, share, p.steals_attempted, p.steals_successful, p.steals_received,
      p.steals_served, p.lifeline_requests_sent, p.lifeline_requests_received,
      p.lifeline_activations, p.lifeline_loot_sent, p.loot_sent_items,
      static_cast<double>(p.loot_sent_bytes) / 1024.0, p.loot_received_items,
      static_cast<double>(p.loot_received_bytes) / 1024.0, p.local_splits, p.idle_seconds);
}

} // namespace

std::string run_stats::table() const {
  const place_stats t = total();
  const double rate = seconds > 0 ? static_cast<double>(t.items) / seconds : 0.0;
  std::string s = fmt::format(
      "apgas glb: {} place(s) x {} worker(s), {:.3f} s, {} items ({:.2f} M/s), busiest place "
      "{:.3f} x the mean (n={} w={} l={} z={} m={} tree={})\n",
      places.size(), workers, seconds, t.items, rate / 1e6, imbalance(), params.items_per_batch,
      params.random_steals, params.lifeline_base, params.lifeline_count, params.random_victims,
      params.tree ? "yes" : "no");
  s += fmt::format("  {:>6} {:>13} {:>7} {:>16} {:>16} {:>13} {:>6} {:>6} {:>22} {:>22} {:>7} "
                   "{:>8}\n",
                   "place", "items", "share", "steals sent/ok", "received/served", "lifeline s/r",
                   "fed", "fed to", "loot out items/KiB", "loot in items/KiB", "splits", "idle s");
  for (const place_stats& p : places) s += row(std::to_string(p.place), p, t.items);
  if (places.size() > 1) s += row("total", t, t.items);
  if (!resumed_from.empty())
    s += fmt::format("  resumed from {} in {:.3f} s (read, checked, set up at every place)\n",
                     resumed_from, resume_seconds);
  if (checkpoints > 0)
    s += fmt::format("  {} checkpoint(s): places paused {:.2f} ms each, then {:.2f} ms to write "
                     "and commit; the newest is {:.1f} KiB\n",
                     checkpoints, 1e3 * checkpoint_pause_seconds / static_cast<double>(checkpoints),
                     1e3 * checkpoint_write_seconds / static_cast<double>(checkpoints),
                     static_cast<double>(checkpoint_bytes) / 1024.0);
  return s;
}

namespace detail {

std::uint64_t next_run_id() noexcept {
  static std::atomic<std::uint64_t> count{0};
  // relaxed: only uniqueness matters; the place in the high bits keeps ids of different
  // callers apart.
  return (static_cast<std::uint64_t>(here()) << 40) |
         (count.fetch_add(1, std::memory_order_relaxed) + 1);
}

void print_stats_if_asked(const run_stats& stats) {
  const local_runtime* rt = local_runtime::current();
  if (rt == nullptr || !rt->opts().stats) return;
  const std::string t = stats.table();
  std::fputs(t.c_str(), stderr);
}

} // namespace detail

} // namespace apgas::glb
