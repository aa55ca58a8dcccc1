// The network's side of teams and their collectives: communicators and nonblocking
// collectives (MPI's), started by an activity and completed by the place's polling, which then
// wakes the activity (data/include/apgas/team.hpp). A transport that has them returns this
// interface from transport::collectives(): MPI (places/src/transport/mpi_collectives.cpp) and
// the one-place transport (every collective of one member completes at once).
#pragma once

#include "apgas/reductions.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace apgas::detail {

using place_id = std::uint32_t;

/// @brief A team's communicator, by number (0: every place).
using team_handle = std::uint32_t;
inline constexpr team_handle k_world_team = 0;

/// @brief What a collective does (MPI's nonblocking collectives, one each).
enum class collective_kind : std::uint8_t {
  barrier,
  broadcast,  ///< recv (count) from root to all, in place
  reduce,     ///< send -> recv at root
  allreduce,  ///< send -> recv (send may be recv: in place)
  scan,       ///< inclusive
  exscan,     ///< exclusive (rank 0's recv is left as it was)
  gather,     ///< send (count) -> recv (count * size) at root
  allgather,  ///< send (count) -> recv (count * size)
  allgatherv, ///< send (count) -> recv, recv_counts and recv_displs per rank
  alltoall,   ///< send (count per rank) -> recv (count per rank)
  alltoallv,  ///< send/recv with counts and displacements per rank
  /// send: neighbour_transfer[count], this member's sends and receives (a halo exchange)
  neighbour_exchange,
};
const char* to_string(collective_kind k) noexcept;

/// @brief Cells of memory as bytes: `runs` runs of `run_bytes` bytes, the first at `first`, each
/// `stride` bytes after the one before (a row of a 2D part: one run; a column: one per row).
struct halo_region {
  std::byte* first = nullptr;
  std::size_t run_bytes = 0;
  std::size_t stride = 0;
  std::size_t runs = 0; ///< 0: no region (a side without a neighbour)

  std::size_t bytes() const noexcept { return run_bytes * runs; }
};

/// @brief One message of a neighbour exchange: `cells` sent to team rank `peer`, or received
/// from it into `cells`. A send matches the receive of the same tag at its peer; the sizes must
/// agree. Messages of one tag between two members arrive in the order they were sent.
struct neighbour_transfer {
  place_id peer = 0;
  std::uint8_t tag = 0; ///< below k_neighbour_tags
  bool send = false;
  halo_region cells;
};
inline constexpr std::uint8_t k_neighbour_tags = 16;

/// @brief An element's type as the network sees it: a number MPI knows, or bytes.
struct element_type {
  enum class scalar : std::uint8_t { bytes, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64 };
  scalar kind = scalar::bytes;
  std::uint32_t size = 1; ///< bytes per element
};

/// @brief How a reduction combines two elements: a built-in operation on numbers (MPI's own),
/// or `combine` (acc = op(acc, value) on the bytes of one element) for anything else.
struct reduce_op {
  enum class builtin : std::uint8_t { none, sum, min, max };
  builtin op = builtin::none;
  combine_fn combine = nullptr;
  bool commutative = false; ///< a user operation: may the network reorder its operands?
};

/// @brief One collective call: the buffers stay the caller's until it completes.
struct collective_call {
  collective_kind kind = collective_kind::barrier;
  team_handle team = k_world_team;
  place_id root = 0; ///< team rank (broadcast, reduce, gather)
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0; ///< elements (per rank for gather, allgather, alltoall)
  element_type type;
  reduce_op op;
  // allgatherv: recv_counts/recv_displs per rank; alltoallv: all four (elements).
  const int* send_counts = nullptr;
  const int* send_displs = nullptr;
  const int* recv_counts = nullptr;
  const int* recv_displs = nullptr;
};

/// @brief An allreduce among a group of places that is no team: `members` (ascending place
/// ids, this place among them), on a communicator for groups, its messages told apart from
/// other groups' by `lane` (below collective_network::group_lanes(); two groups in flight at
/// once that share a place must use different lanes). `value` holds this member's
/// contribution, `bytes` of it, and receives the result in place: the contributions combined
/// in member order by `combine` (acc = acc op value, acc the lower members' part). The arrays
/// stay the caller's until the call completes. A clock phase on its collective path is one.
struct group_call {
  const place_id* members = nullptr;
  std::size_t count = 0;    ///< members
  std::size_t my_index = 0; ///< this place's index in members
  std::uint32_t lane = 0;
  void* value = nullptr;
  std::size_t bytes = 0; ///< the most a value takes
  combine_fn combine = nullptr;
  /// How many of a value's bytes to send (its used part: the rest is not read), or null for
  /// `bytes`. It may be 0: the receiver then reads `empty_value` (`bytes` of them) instead, so
  /// that a common value costs the messages of a barrier.
  std::size_t (*used_bytes)(const void* value) = nullptr;
  const void* empty_value = nullptr;
};

/// @brief Told once when a collective completes (from the polling thread, under the network's
/// lock: it must not call the transport).
class collective_done {
public:
  virtual void done(std::exception_ptr error) noexcept = 0;

protected:
  ~collective_done() = default;
};

/// @brief Teams and collectives of a network. Thread-safety: any thread.
class collective_network {
public:
  virtual ~collective_network() = default;
  /// @brief The places of a team, by team rank.
  virtual const std::vector<place_id>& members(team_handle team) const = 0;
  /// @brief This place's rank in `team`.
  virtual place_id rank(team_handle team) const = 0;
  /// @brief True if every collective completes inside start() (one place).
  virtual bool completes_at_once() const noexcept { return false; }
  /// @brief Starts `call`; `done` is told when it completes (for completes_at_once(), before
  /// start returns). @throws transport_error if the network refuses it.
  virtual void start(const collective_call& call, collective_done& done) = 0;
  /// @brief Collective over `parent`'s members, which must all be calling it (each has seen
  /// every member arrive: a barrier first): the members with the same color >= 0 form a team,
  /// ranked by key then by parent rank. @return its handle, or nullopt-like ~0u for a
  /// negative color (no team).
  virtual team_handle split(team_handle parent, int color, int key) = 0;
  /// @brief Frees a team made by split (its collectives have all completed).
  virtual void free(team_handle team) noexcept = 0;
  /// @brief Collectives started and not completed (for idle polling and the state dump).
  virtual std::size_t pending() const noexcept = 0;
  /// @brief Tests the started collectives once, if no other thread holds the network (for an
  /// activity that waits a moment in place, its worker having nothing else to do).
  virtual void progress() {}
  /// @brief How many lanes groups may use (0: this network has no group collectives).
  virtual std::uint32_t group_lanes() const noexcept { return 0; }
  /// @brief Starts a group's allreduce (see group_call); `done` is told when it completes.
  /// pre: group_lanes() > call.lane.
  virtual void start_group(const group_call& call, collective_done& done) {
    (void)call;
    (void)done;
    throw std::logic_error("apgas: this network has no group collectives");
  }
};

/// @brief split()'s answer to a member that asked for no team (a negative color).
inline constexpr team_handle k_no_team = ~team_handle{0};

/// @brief One-sided access to memory that places registered (MPI RMA on a dynamic window):
/// reads and writes of another place's memory without running code there. Each completes
/// inside its start (when the network copies there) or in the place's polling, and tells its
/// collective_done. Thread-safety: any thread.
class rma_network {
public:
  virtual ~rma_network() = default;
  /// @brief Makes `bytes` bytes at `base` (of this place) reachable from every place.
  virtual void attach(void* base, std::size_t bytes) = 0;
  /// @brief Undoes attach (pre: no access to it is in flight).
  virtual void detach(void* base) noexcept = 0;
  /// @brief Copies `bytes` bytes at `address` of place `from` (attached there) to `to`.
  virtual void start_get(place_id from, std::uintptr_t address, void* to, std::size_t bytes,
                         collective_done& done) = 0;
  /// @brief Copies `bytes` bytes from `from` to `address` of place `to`; done once they are
  /// there (visible to that place), not only once `from` may be reused.
  virtual void start_put(place_id to, std::uintptr_t address, const void* from, std::size_t bytes,
                         collective_done& done) = 0;
};

} // namespace apgas::detail
