// sim_routing: what routed aggregation (places/src/transport/routing.hpp and
// places/src/batch_relay.hpp) changes for an all-to-all stream of aggregated updates at up to
// 100,000 places, against direct coalescing: coalescing buffers and their memory per place,
// the aggregator's buffers (and the batches a place holds as an intermediate), network
// messages per place, their mean size, and the hops an update takes. Deterministic, in one
// process, no MPI.
//
//     sim_routing [--places 1000,10000,100000] [--updates N] [--csv FILE]
//
// The stream: every place pushes N updates (default 4,194,304: HPCC RandomAccess with 2^20
// words per place) of 8 bytes through an apgas::aggregator (buffers of 8 KiB), spread evenly
// over the other places, then flushes. The model is a fluid one: each place sends N / (P - 1)
// updates to each other place. Direct, the aggregator turns those into batches per
// destination (a frame of a 37-byte head, as active_messages writes it, and the updates).
// Routed, the grid is the runtime's (route_grid): the places of the sender's row and column
// get batches as before; the updates for any other place go into one relay buffer per
// intermediate place (a 4-byte target index and the update each, a table of the targets it
// names per relay batch), and the intermediate merges what the places of its row send it for
// each place of its column into batches of 8 KiB, which it sends on. The coalescer gathers
// frames per next place into buffers of the size the runtime uses
// (coalescer::fitted_buffer_bytes for the places it keeps buffers for, with the default
// --coalesce-bytes and --coalesce-memory-mib), each buffer leaving when full and once more,
// partly filled, at the flush. A place's figures count what it sends itself and what it
// relays; they are computed exactly for three places (the first, one in the middle, the last:
// it may sit in a short last row) and the table shows the largest.
#include "coalescer.hpp"
#include "routing.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using apgas::detail::coalescer;
using apgas::detail::k_frame_header;
using apgas::detail::place_id;
using apgas::detail::route_grid;

constexpr std::uint64_t k_update_bytes = 8;        ///< one RandomAccess update
constexpr std::uint64_t k_aggregator_bytes = 8192; ///< aggregator buffer per destination
constexpr std::uint64_t k_batch_head_bytes = 37;   ///< kind, finish, code offset, target
/// A relay batch's head: kind, finish, code offset, update bytes, hold bytes, target count.
constexpr std::uint64_t k_relay_head_bytes = 33;
constexpr std::uint64_t k_relay_target_bytes = 16; ///< a target in a relay batch's table
constexpr std::uint64_t k_relay_record_bytes = 4 + k_update_bytes; ///< index, update

struct figures {
  std::uint64_t buffers = 0;          ///< coalescing buffers the place fills
  std::uint64_t buffer_bytes = 0;     ///< each
  std::uint64_t messages = 0;         ///< network messages it sends (own and relayed)
  std::uint64_t bytes = 0;            ///< their bytes
  std::uint64_t relayed_bytes = 0;    ///< of which relayed for others
  std::uint64_t aggregator_bytes = 0; ///< its aggregator's buffers and the batches it holds
  double two_hop_share = 0;           ///< of its own updates, those that take two hops
};

/// The bytes of `updates` updates in aggregator batches of k_aggregator_bytes, with heads.
std::uint64_t batch_bytes(std::uint64_t updates) {
  const std::uint64_t per_batch = k_aggregator_bytes / k_update_bytes;
  const std::uint64_t batches = (updates + per_batch - 1) / per_batch;
  return updates * k_update_bytes + batches * (k_batch_head_bytes + k_frame_header);
}

/// The bytes of `updates` updates for `targets` places (evenly mixed) in relay batches.
std::uint64_t relay_bytes(std::uint64_t updates, std::uint64_t targets) {
  const std::uint64_t per_batch = k_aggregator_bytes / k_relay_record_bytes;
  const std::uint64_t batches = (updates + per_batch - 1) / per_batch;
  // The targets a batch names: those of its per_batch updates drawn from `targets`.
  const double named = static_cast<double>(targets) *
                       (1 - std::pow(1 - 1 / static_cast<double>(targets),
                                     static_cast<double>(std::min(per_batch, updates))));
  return updates * k_relay_record_bytes +
         batches * (k_relay_head_bytes + k_frame_header +
                    static_cast<std::uint64_t>(named * k_relay_target_bytes));
}

/// Place `s`'s figures for a stream of `updates` per place over `places` places.
figures place_figures(place_id places, place_id s, std::uint64_t updates, bool routed) {
  apgas::options opts;
  opts.route_above = routed ? 0 : places;
  const route_grid grid(places, opts.route_above);
  const std::uint64_t per_pair = updates / (places - 1);
  std::vector<std::uint64_t> to_hop(places, 0); // bytes s puts in its buffer for each place
  std::vector<std::uint64_t> via(places, 0);    // s's destinations relayed by each place
  std::uint64_t two_hops = 0;
  std::uint64_t aggregator_buffers = 0;
  for (place_id d = 0; d < places; ++d) {
    if (d == s) continue;
    const place_id hop = grid.next_hop(s, d);
    if (hop == d) {
      to_hop[d] += batch_bytes(per_pair);
      ++aggregator_buffers;
    } else {
      ++via[hop];
      ++two_hops;
    }
  }
  for (place_id m = 0; m < places; ++m) {
    if (via[m] == 0) continue;
    to_hop[m] += relay_bytes(per_pair * via[m], via[m]);
    ++aggregator_buffers; // the relay buffer for m
  }
  figures f;
  // What s relays: the updates of the other places of its row and column for the places they
  // reach through s, each destination's merged into batches s holds (one per destination).
  if (grid.on()) {
    const place_id c = grid.columns();
    std::vector<place_id> sources;
    for (place_id p = s / c * c; p < std::min<place_id>(places, s / c * c + c); ++p)
      sources.push_back(p);
    for (place_id p = s % c; p < places; p += c) sources.push_back(p);
    std::vector<std::uint64_t> held(places, 0); // updates s relays to each place
    for (const place_id src : sources) {
      if (src == s) continue;
      for (place_id d = 0; d < places; ++d)
        if (d != s && d != src && grid.next_hop(src, d) == s) held[d] += per_pair;
    }
    for (place_id d = 0; d < places; ++d) {
      if (held[d] == 0) continue;
      const std::uint64_t b = batch_bytes(held[d]);
      to_hop[grid.next_hop(s, d)] += b;
      f.relayed_bytes += b;
      ++aggregator_buffers; // the batch held for d
    }
  }
  f.aggregator_bytes = aggregator_buffers * k_aggregator_bytes;
  f.buffer_bytes = coalescer::fitted_buffer_bytes(grid.peers(s) + 1, opts);
  for (const std::uint64_t b : to_hop) {
    if (b == 0) continue;
    ++f.buffers;
    f.bytes += b;
    f.messages += (b + f.buffer_bytes - 1) / f.buffer_bytes; // full ones, then the flushed rest
  }
  f.two_hop_share = static_cast<double>(two_hops) / static_cast<double>(places - 1);
  return f;
}

std::vector<place_id> parse_places(const char* text) {
  std::vector<place_id> out;
  for (const char* p = text; *p != '\0';) {
    out.push_back(static_cast<place_id>(std::strtoul(p, const_cast<char**>(&p), 10)));
    if (*p == ',') ++p;
  }
  return out;
}

std::string grouped(std::uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string memory(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 20))
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024) return fmt::format("{:.0f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

} // namespace

int main(int argc, char** argv) {
  std::vector<place_id> places{1000, 10000, 100000};
  std::uint64_t updates = 4'194'304;
  const char* csv_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--places" && i + 1 < argc) places = parse_places(argv[++i]);
    else if (arg == "--updates" && i + 1 < argc) updates = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: sim_routing [--places 1000,10000,100000] [--updates N] "
                           "[--csv FILE]\n");
      return 2;
    }
  }
  std::FILE* csv = csv_path != nullptr ? std::fopen(csv_path, "w") : nullptr;
  if (csv != nullptr)
    std::fprintf(csv, "places,scheme,buffers,buffer_bytes,buffer_memory,messages,mean_bytes,"
                      "relayed_bytes,two_hop_share,aggregator_bytes\n");
  std::printf("| places | scheme | coalescing buffers per place | buffer | buffer memory per place "
              "| network messages per place | mean message | updates taking 2 hops | bytes "
              "relayed per place | aggregator memory per place |\n"
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const place_id p : places) {
    if (p < 2) continue;
    for (const bool routed : {false, true}) {
      figures worst;
      for (const place_id s : {place_id{0}, p / 2, p - 1}) {
        const figures f = place_figures(p, s, updates, routed);
        if (f.messages > worst.messages || f.bytes > worst.bytes) worst = f;
        worst.buffers = std::max(worst.buffers, f.buffers);
        worst.aggregator_bytes = std::max(worst.aggregator_bytes, f.aggregator_bytes);
      }
      const std::uint64_t mean = worst.messages == 0 ? 0 : worst.bytes / worst.messages;
      std::printf("| %s | %s | %s | %s | %s | %s | %s | %.0f %% | %s | %s |\n", grouped(p).c_str(),
                  routed ? "routed" : "direct", grouped(worst.buffers).c_str(),
                  memory(worst.buffer_bytes).c_str(),
                  memory(worst.buffers * worst.buffer_bytes).c_str(),
                  grouped(worst.messages).c_str(), memory(mean).c_str(), 100 * worst.two_hop_share,
                  memory(worst.relayed_bytes).c_str(), memory(worst.aggregator_bytes).c_str());
      if (csv != nullptr)
        std::fprintf(csv, "%u,%s,%llu,%llu,%llu,%llu,%llu,%llu,%.4f,%llu\n", p,
                     routed ? "routed" : "direct", static_cast<unsigned long long>(worst.buffers),
                     static_cast<unsigned long long>(worst.buffer_bytes),
                     static_cast<unsigned long long>(worst.buffers * worst.buffer_bytes),
                     static_cast<unsigned long long>(worst.messages),
                     static_cast<unsigned long long>(mean),
                     static_cast<unsigned long long>(worst.relayed_bytes), worst.two_hop_share,
                     static_cast<unsigned long long>(worst.aggregator_bytes));
    }
  }
  if (csv != nullptr) std::fclose(csv);
  return 0;
}
