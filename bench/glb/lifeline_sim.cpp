// bench_lifeline_sim: the lifeline protocol simulated at 1,000 to 100,000 places (see
// lifeline_model.hpp): for each place count, how long work takes to spread from place 0 to every
// place (in microseconds and in rounds: one round is a message's latency plus one batch, the
// longest a request can wait before its victim looks), the steal messages and lifeline
// activations per place (mean and most), and the efficiency of the run. Every run is checked
// (each item processed once, termination exactly when the work is done).
//
//   bench_lifeline_sim [--places P1,P2,...] [--items-per-place N] [--n N] [--l L] [--w W]
//                      [--z Z] [--m M] [--tree yes|no] [--layout place0|spread|last]
//                      [--latency-ns T] [--item-ns T] [--jitter-ns T] [--seed S] [--csv]
#include "lifeline_model.hpp"
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void usage() {
  fmt::print(stderr,
             "usage: bench_lifeline_sim [--places P1,P2,...] [--items-per-place N] [--n N] "
             "[--l L] [--w W] [--z Z] [--m M] [--tree yes|no] [--layout place0|spread|last] "
             "[--latency-ns T] [--item-ns T] [--jitter-ns T] [--seed S] [--csv]\n");
  std::exit(2);
}

std::vector<std::uint32_t> parse_list(const std::string& s) {
  std::vector<std::uint32_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    out.push_back(static_cast<std::uint32_t>(std::strtoul(item.c_str(), nullptr, 10)));
  return out;
}

} // namespace

int main(int argc, char** argv) {
  glb_model::config c;
  std::vector<std::uint32_t> places{1000, 3162, 10000, 31623, 100000};
  std::uint64_t per_place = 200'000;
  bool csv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    const auto number = [&] { return std::strtoull(value().c_str(), nullptr, 10); };
    if (a == "--places") places = parse_list(value());
    else if (a == "--items-per-place") per_place = number();
    else if (a == "--n") c.items_per_batch = static_cast<unsigned>(number());
    else if (a == "--l") c.lifeline_base = static_cast<unsigned>(number());
    else if (a == "--w") c.random_steals = static_cast<unsigned>(number());
    else if (a == "--z") c.lifeline_count = static_cast<unsigned>(number());
    else if (a == "--m") c.random_victims = static_cast<unsigned>(number());
    else if (a == "--tree") c.tree = value() == "yes";
    else if (a == "--layout") {
      const std::string v = value();
      c.layout = v == "spread" ? glb_model::start_layout::spread
                 : v == "last" ? glb_model::start_layout::at_last_place
                               : glb_model::start_layout::at_place_0;
    } else if (a == "--latency-ns") c.latency = static_cast<glb_model::time_ns>(number());
    else if (a == "--item-ns") c.t_item = static_cast<glb_model::time_ns>(number());
    else if (a == "--jitter-ns") c.jitter = static_cast<glb_model::time_ns>(number());
    else if (a == "--seed") c.seed = number();
    else if (a == "--csv") csv = true;
    else usage();
  }
  if (csv) {
    fmt::print("places,z,w,end_us,ideal_us,efficiency,spread_us,spread_rounds,steals_mean,"
               "steals_max,messages_mean,messages_max,received_mean,received_max,"
               "activations_mean,activations_max,never_fed,events,sim_seconds\n");
  } else {
    fmt::print("lifeline protocol, simulated: {} items per place from place 0's bag "
               "(layout {}), n={} l={} tree={}, item {} ns, message {} ns (+ up to {} ns)\n",
               per_place, static_cast<int>(c.layout), c.items_per_batch, c.lifeline_base,
               c.tree ? "yes" : "no", c.t_item, c.latency, c.jitter);
    fmt::print("{:>7} {:>2} {:>2} {:>10} {:>6} {:>10} {:>6} {:>13} {:>15} {:>13} {:>11} {:>6}\n",
               "places", "z", "w", "time ms", "eff.", "spread us", "rounds", "steals mean/max",
               "messages mean/max", "recv mean/max", "fed mean/max", "check");
  }
  bool ok = true;
  for (const std::uint32_t p : places) {
    glb_model::config run = c;
    run.places = p;
    run.items = per_place * p;
    const auto start = std::chrono::steady_clock::now();
    glb_model::model m(run);
    const glb_model::result r = m.run();
    const double sim_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const unsigned z =
        c.lifeline_count != 0
            ? c.lifeline_count
            : apgas::detail::glb::lifeline_dimensions(p, std::max(c.lifeline_base, 2U));
    const unsigned w = c.random_steals != 0 ? c.random_steals : z;
    const double ideal_us = static_cast<double>(per_place) * static_cast<double>(c.t_item) / 1e3;
    const double round = static_cast<double>(
        c.latency + static_cast<glb_model::time_ns>(c.items_per_batch) * c.t_item);
    const double rounds = static_cast<double>(r.spread) / round;
    ok = ok && r.errors.empty();
    if (csv) {
      fmt::print("{},{},{},{:.1f},{:.1f},{:.4f},{:.1f},{:.2f},{:.3f},{},{:.3f},{},{:.3f},{},{:.3f},"
                 "{},{},{},"
                 "{:.2f}\n",
                 p, z, w, static_cast<double>(r.end) / 1e3, ideal_us, r.efficiency,
                 static_cast<double>(r.spread) / 1e3, rounds, r.steals_mean, r.steals_max,
                 r.steal_messages_mean, r.steal_messages_max, r.received_mean, r.received_max,
                 r.activations_mean, r.activations_max, r.places_never_fed, r.events, sim_seconds);
    } else {
      fmt::print(
          "{:>7} {:>2} {:>2} {:>10.3f} {:>5.1f}% {:>10.1f} {:>6.1f} {:>7.2f}/{:<5} {:>8.2f}/{:<6} "
          "{:>7.2f}/{:<5} {:>5.2f}/{:<5} {:>6}\n",
          p, z, w, static_cast<double>(r.end) / 1e6, 100.0 * r.efficiency,
          static_cast<double>(r.spread) / 1e3, rounds, r.steals_mean, r.steals_max,
          r.steal_messages_mean, r.steal_messages_max, r.received_mean, r.received_max,
          r.activations_mean, r.activations_max, r.errors.empty() ? "ok" : "FAILED");
    }
    for (const std::string& e : r.errors) fmt::print(stderr, "  {} places: {}\n", p, e);
  }
  return ok ? 0 : 1;
}
