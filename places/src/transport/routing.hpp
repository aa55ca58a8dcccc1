// Routed coalescing: beyond options::route_above places, a logical message to a place outside
// this place's row and column of a grid of about sqrt(P) x sqrt(P) places goes through one
// intermediate place, so that a place keeps coalescing buffers only for the places of its row
// and its column (about 2 sqrt(P) instead of P - 1), and each of them fills about sqrt(P) / 2
// times faster (the conveyors of the bale library route the same way). MPI-free; the transport
// (transport_base.cpp) sends, forwards and delivers routed frames; the protocol simulation
// (bench/scaling/sim_routing.cpp) uses the same grid.
//
// The grid: c = ceil(sqrt(P)) columns, place p at row p / c, column p % c (the last row may be
// short). From s to d:
//  - same row or same column: direct;
//  - otherwise through m = (row(s), column(d)), which shares s's row and d's column; if the
//    last row is short and m does not exist, through m' = (row(d), column(s)), which shares
//    s's column and d's row (it exists: d's row is then a full one, or s's row would be the
//    last and so would d's, and they would share it).
// Either way the intermediate shares a row or a column with d, so it sends straight on: at
// most two hops, and a place only ever sends to the places of its row and its column.
//
// Routed frame: a frame whose length prefix has k_routed_flag set, holding [source][destination]
// (two 32-bit place ids, native byte order) and then the logical message. The intermediate
// appends the same frame (source unchanged) to its own buffer towards the destination, without
// delivering it; the destination hands the message to its handler as if it came from the
// source. Direct messages are framed as before (no flag), so routing costs nothing for them.
// The forwarded frame is coalesced again at the intermediate with everything else it sends to
// the destination (its own messages and those of the other places of its row): that is where
// the second hop's messages fill. It leaves when that buffer is full, at the intermediate's
// flush interval, or when the intermediate goes idle (idle workers flush); a message sent with
// send_now (an `at`, a reply, a finish report: somebody waits for it) is marked urgent (the top
// bit of its source, free since MPI ranks are ints) and leaves the intermediate in the poll
// that received it.
//
// Why a finish still counts a routed activity until it ran (the distributed finish counts, per
// place, activities sent to each place and activities received from each place, see
// distributed_finish.cpp): the source counts the activity as sent to d when it sends it, and d
// counts it as received from s when the handler gets it, with s as the source, exactly as for
// a direct message. The intermediate neither counts nor delivers it. So while the frame is at
// the intermediate (received, in its coalescing buffer, or on either wire) the finish sees one
// more activity sent from s to d than d received from s, and cannot end; and it is delivered
// exactly once, because the intermediate forwards each frame it takes from the network exactly
// once and the network neither loses nor duplicates. Per-(source, destination) order also
// holds: every message from s to d takes the same path, and each hop keeps its order.
#pragma once

#include "apgas/detail/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace apgas::detail {

/// @brief Set in a frame's length prefix: the frame is routed (source and destination first).
inline constexpr std::uint32_t k_routed_flag = 0x80000000u;
/// @brief The bytes a routed frame holds before the message: source, destination.
inline constexpr std::size_t k_route_header = 2 * sizeof(place_id);

/// @brief The grid of routed coalescing for `places` places (see the top of this file).
/// Thread-safety: immutable.
class route_grid {
public:
  /// @brief The grid of `places` places, routing on if places > route_above.
  route_grid(place_id places, std::uint32_t route_above) noexcept
      : m_places(places), m_on(places > route_above), m_columns(columns_for(places)) {}

  /// @brief True if messages may take two hops.
  bool on() const noexcept { return m_on; }
  /// @brief Columns of the grid (places per full row).
  place_id columns() const noexcept { return m_columns; }

  /// @brief The place a message from `from` to `to` goes to first: `to` itself when routing is
  /// off, when from and to share a row or a column, or when from == to.
  place_id next_hop(place_id from, place_id to) const noexcept {
    if (!m_on) return to;
    const place_id c = m_columns;
    const place_id from_row = from / c;
    const place_id to_row = to / c;
    const place_id to_column = to % c;
    if (from_row == to_row || from % c == to_column) return to;
    const place_id via = from_row * c + to_column;
    if (via < m_places) return via;
    return to_row * c + from % c; // the last row is short (see above)
  }

  /// @brief The places `from` may send to itself (its row and its column, itself excluded):
  /// with routing on, those for which it keeps buffers; otherwise every other place.
  std::size_t peers(place_id from) const noexcept {
    if (!m_on) return m_places - 1;
    const place_id c = m_columns;
    const place_id row_start = from / c * c;
    const place_id row_end = row_start + c < m_places ? row_start + c : m_places;
    std::size_t column = 0;
    for (place_id p = from % c; p < m_places; p += c) ++column;
    return (row_end - row_start - 1) + (column - 1);
  }

  /// @brief ceil(sqrt(places)), at least 1.
  static place_id columns_for(place_id places) noexcept {
    place_id c = 1;
    while (static_cast<std::uint64_t>(c) * c < places) ++c;
    return c;
  }

private:
  place_id m_places;
  bool m_on;
  place_id m_columns;
};

/// @brief The source and destination of a routed frame's content. pre: the frame holds at
/// least k_route_header bytes (validate_frames checks it).
struct route_header {
  place_id source;
  place_id destination;
  bool urgent = false; ///< sent with send_now: the intermediate sends it on at once
};

/// @brief Marks an urgent route in the source's field (place ids stay below 2^31).
inline constexpr place_id k_urgent_flag = 0x80000000u;

/// @brief Reads the route of a routed frame's content.
inline route_header read_route(std::span<const std::byte> frame) noexcept {
  route_header r;
  std::memcpy(&r.source, frame.data(), sizeof(place_id));
  std::memcpy(&r.destination, frame.data() + sizeof(place_id), sizeof(place_id));
  r.urgent = (r.source & k_urgent_flag) != 0;
  r.source &= ~k_urgent_flag;
  return r;
}

/// @brief Writes a route in front of a routed frame's message. pre: r.source < 2^31.
inline void write_route(std::byte* at, route_header r) noexcept {
  const place_id source = r.source | (r.urgent ? k_urgent_flag : 0);
  std::memcpy(at, &source, sizeof(place_id));
  std::memcpy(at + sizeof(place_id), &r.destination, sizeof(place_id));
}

} // namespace apgas::detail
