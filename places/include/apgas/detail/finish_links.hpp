// What a sender needs of the distributed finish: the id a message of a finish carries, and the
// counting of an activity sent to another place, inline for the common cases (every remote
// async passes here). The rest of the protocol (proxies, homes, reports, asks, cleanups) is the
// distributed_finish module's, in places/src/distributed_finish.{hpp,cpp}.
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/finish_tally.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace apgas::detail {

class distributed_finish;

/// @brief The distributed state of a home finish, which its finish_state::m_remote points to
/// from its first remote activity until it is destroyed.
struct home_link {
  home_link(distributed_finish& module, const finish_id& fid, place_id places)
      : owner(&module), id(fid), touched_words((places + 63) / 64),
        touched(std::make_unique<std::atomic<std::uint64_t>[]>(touched_words)) {}
  distributed_finish* owner; ///< the module of the finish's place
  finish_id id;
  home_tally tally;
  /// Places that may hold a proxy (told at cleanup), a bit each: one atomic operation per send
  /// instead of a lock and a search, and places / 8 bytes per distributed finish.
  std::size_t touched_words;
  std::unique_ptr<std::atomic<std::uint64_t>[]> touched;
  /// @return true if p was not touched before.
  bool touch(place_id p) {
    std::atomic<std::uint64_t>& word = touched[p / 64];
    const std::uint64_t bit = std::uint64_t{1} << (p % 64);
    // relaxed: the bits are read by the cleanup, after the finish ended (all its strands'
    // writes are acquired through its count); the load skips the RMW for known places.
    if ((word.load(std::memory_order_relaxed) & bit) != 0) return false;
    return (word.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
  }
  template <class F>
  void for_each_touched(F&& f) const {
    for (std::size_t i = 0; i < touched_words; ++i) {
      std::uint64_t bits = touched[i].load(std::memory_order_relaxed); // see touch()
      while (bits != 0) {
        const int b = __builtin_ctzll(bits);
        bits &= bits - 1;
        f(static_cast<place_id>(i * 64 + static_cast<std::size_t>(b)));
      }
    }
  }
};

/// @brief What the send path needs of a proxy (the part of a finish at a place other than its
/// home; the rest is the module's). A proxy's finish_state::m_remote points to this.
struct proxy_link {
  explicit proxy_link(const finish_id& fid) : id(fid) {}
  finish_id id;
  proxy_tally tally; ///< what this place sent since its last report
};

/// An activity of an SPMD finish's proxy started a remote activity (see is_spmd).
[[noreturn, gnu::cold, gnu::noinline]] void throw_spmd_nested();
/// An SPMD finish started a second activity at place `to`.
[[noreturn, gnu::cold, gnu::noinline]] void throw_spmd_second(place_id to);
/// @brief The remote part of home finish `f` opens (its first activity at another place since
/// the part was last closed): f's count holds it open, and idle workers expect reports.
[[gnu::noinline]] void open_remote_part(home_link& link, finish_state& f) noexcept;

/// @brief Counts one activity of `f` sent to `to`, before it is sent. pre: the caller is a
/// live strand of `f`.
/// @return the finish id the activity's message carries, or null (nothing counted) for a home
/// finish that has no link yet: its first remote activity takes the module's slow path, which
/// creates the link.
[[gnu::always_inline]] inline const finish_id* count_linked_send(finish_state& f, place_id to) {
  if (f.m_reopenable) {
    // An activity of a proxy: at every place but a finish's home, the common case. A proxy's
    // link is set when it is made, before any of its activities runs.
    proxy_link& px = *static_cast<proxy_link*>(f.m_remote);
    if (is_spmd(px.id)) [[unlikely]]
      throw_spmd_nested();
    px.tally.on_send(to);
    return &px.id;
  }
  // acquire: pairs with the release that publishes a new link (distributed_finish), so a link
  // seen without its module's lock is seen whole. f cannot end meanwhile (see pre).
  void* known = std::atomic_ref<void*>(f.m_remote).load(std::memory_order_acquire);
  if (known == nullptr) [[unlikely]]
    return nullptr;
  home_link& home = *static_cast<home_link*>(known);
  if (!home.touch(to) && is_spmd(home.id)) [[unlikely]]
    throw_spmd_second(to);
  // The remote part of f counts in f's count while it is open. The caller is a live strand of
  // f, and the message that could close the part is sent after this.
  if (home.tally.on_send(to)) [[unlikely]]
    open_remote_part(home, f);
  return &home.id;
}

} // namespace apgas::detail
