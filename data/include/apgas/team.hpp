/// @file Teams and their collectives (X10's Team): a set of places that call collectives
/// together, one activity per member place, in the same order at every member.
///
///     apgas::team all = apgas::team::world();             // every place; rank = place
///     double total = co_await all.allreduce(x, apgas::sum);
///     co_await all.barrier();
///     std::vector<long> counts = co_await all.allgather(n);
///     apgas::team half = co_await all.split(apgas::here() % 2, apgas::here());
///
/// A collective runs on the team's own communicator (barriers and allreduces point to point,
/// the others MPI's nonblocking collectives). One that does not complete at once is waited for
/// in place while the worker has nothing else to do (up to --spin-us); otherwise the calling
/// activity suspends (its worker runs other work) and the place's polling completes it.
/// Values are bitwise (numbers, plain structs, std::array of them) or contiguous ranges of
/// them (std::span, in place). A reduction takes apgas::sum, apgas::min, apgas::max or any
/// stateless associative function object (MPI keeps the ranks' order for it; give the type a
/// `static constexpr bool commutative = true` to let MPI reorder). An operation that throws
/// fails the collective at the places where it threw.
///
/// The rule: at every member, the collectives of one team are called in the same order, each
/// by one activity (MPI's rule; two activities of a place that call collectives of one team
/// concurrently break it, and so do members that call two teams' collectives in different
/// orders). A member that never calls leaves the others waiting: the SIGUSR1 state dump lists
/// the collectives a place waits in, with their call sites.
#pragma once

#include "apgas/detail/team_collective.hpp"
#include "apgas/task.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <stdexcept>
#include <vector>

namespace apgas {

using place_id = detail::place_id;

/// @brief A set of places that call collectives together. A value type: copies name the same
/// team. Thread-safety: any thread; its collectives follow the rule at the top of this file.
class team {
  template <class R, class Buffers>
  using awaiter = detail::collective_awaiter<R, Buffers>;

public:
  /// @brief Every place, ranked by place id. pre: a runtime exists.
  static team world();
  /// @brief No team (what split gives a member that asked for none).
  team() = default;

  /// @brief True unless this is no team.
  explicit operator bool() const noexcept { return m_state != nullptr; }
  /// @brief The number of member places.
  place_id size() const;
  /// @brief This place's rank in the team.
  place_id rank() const;
  /// @brief The place of team rank `r`. @throws std::out_of_range if r >= size().
  place_id place(place_id r) const;
  /// @brief The member places, by rank.
  const std::vector<place_id>& places() const;

  /// @brief Waits until every member has called it.
  APGAS_AWAIT_IT awaiter<void, detail::no_buffers>
  barrier(std::source_location site = std::source_location::current()) const {
    return make<void>(detail::collective_kind::barrier, {}, 0, 0, site, detail::no_buffers{});
  }

  /// @brief `value` at every member becomes root's (a team rank), in place.
  template <class T>
  APGAS_AWAIT_IT awaiter<void, detail::no_buffers>
  broadcast(T& value, place_id root,
            std::source_location site = std::source_location::current()) const {
    return broadcast(std::span<T>(&value, 1), root, site);
  }
  /// @brief `values` at every member become root's, in place (the same size everywhere).
  template <class T>
  APGAS_AWAIT_IT awaiter<void, detail::no_buffers>
  broadcast(std::span<T> values, place_id root,
            std::source_location site = std::source_location::current()) const {
    detail::require_team_value<T>();
    return make<void>(detail::collective_kind::broadcast, detail::copy_spec<T>(), values.size(),
                      root, site, detail::no_buffers{nullptr, values.data()});
  }

  /// @brief `op` over every member's `value`, at every member.
  template <class T, class Op>
  APGAS_AWAIT_IT awaiter<T, detail::value_buffers<T>>
  allreduce(const T& value, Op, std::source_location site = std::source_location::current()) const {
    const detail::reduction_spec spec = detail::reduction_spec_of<T, Op>();
    return make<T>(detail::collective_kind::allreduce, spec, spec.count, 0, site,
                   detail::value_buffers<T>{value});
  }
  /// @brief `op` element by element over every member's `values` (the same size everywhere),
  /// in place at every member.
  template <class T, class Op>
  APGAS_AWAIT_IT awaiter<void, detail::no_buffers>
  allreduce(std::span<T> values, Op,
            std::source_location site = std::source_location::current()) const {
    const detail::reduction_spec spec = detail::reduction_spec_of<T, Op>();
    return make<void>(detail::collective_kind::allreduce, spec, spec.count * values.size(), 0, site,
                      detail::no_buffers{values.data(), values.data()});
  }
  /// @brief `op` over every member's `value`, at root (a team rank); nullopt elsewhere.
  template <class T, class Op>
  APGAS_AWAIT_IT awaiter<std::optional<T>, detail::optional_buffers<T>>
  reduce(const T& value, Op, place_id root,
         std::source_location site = std::source_location::current()) const {
    const detail::reduction_spec spec = detail::reduction_spec_of<T, Op>();
    return make<std::optional<T>>(detail::collective_kind::reduce, spec, spec.count, root, site,
                                  detail::optional_buffers<T>{value, rank() == root});
  }
  /// @brief Inclusive prefix: `op` over the values of ranks 0 .. rank().
  template <class T, class Op>
  APGAS_AWAIT_IT awaiter<T, detail::value_buffers<T>>
  scan(const T& value, Op, std::source_location site = std::source_location::current()) const {
    const detail::reduction_spec spec = detail::reduction_spec_of<T, Op>();
    return make<T>(detail::collective_kind::scan, spec, spec.count, 0, site,
                   detail::value_buffers<T>{value});
  }
  /// @brief Exclusive prefix: `op` over the values of ranks 0 .. rank() - 1; nullopt at rank 0.
  template <class T, class Op>
  APGAS_AWAIT_IT awaiter<std::optional<T>, detail::optional_buffers<T>>
  exscan(const T& value, Op, std::source_location site = std::source_location::current()) const {
    const detail::reduction_spec spec = detail::reduction_spec_of<T, Op>();
    return make<std::optional<T>>(detail::collective_kind::exscan, spec, spec.count, 0, site,
                                  detail::optional_buffers<T>{value, rank() != 0});
  }

  /// @brief Every member's `value` at root, by rank (empty elsewhere).
  template <class T>
  APGAS_AWAIT_IT awaiter<std::vector<T>, detail::gathered_values<T>>
  gather(const T& value, place_id root,
         std::source_location site = std::source_location::current()) const {
    detail::require_team_value<T>();
    return make<std::vector<T>>(detail::collective_kind::gather, detail::copy_spec<T>(), 1, root,
                                site,
                                detail::gathered_values<T>{value, rank() == root ? size() : 0});
  }
  /// @brief Every member's `value` at every member, by rank.
  template <class T>
  APGAS_AWAIT_IT awaiter<std::vector<T>, detail::gathered_values<T>>
  allgather(const T& value, std::source_location site = std::source_location::current()) const {
    detail::require_team_value<T>();
    return make<std::vector<T>>(detail::collective_kind::allgather, detail::copy_spec<T>(), 1, 0,
                                site, detail::gathered_values<T>{value, size()});
  }
  /// @brief Every member's `values` (any number each) at every member, by rank.
  template <class T>
  APGAS_AWAIT_IT task<std::vector<std::vector<T>>>
  allgatherv(std::span<const T> values,
             std::source_location site = std::source_location::current()) const;
  /// @brief Exchange: `send` holds size() blocks of one size, block r for rank r; gives back
  /// the blocks each rank sent here, by rank, one after the other.
  template <class T>
  APGAS_AWAIT_IT awaiter<std::vector<T>, detail::exchanged<T>>
  alltoall(std::span<const T> send,
           std::source_location site = std::source_location::current()) const {
    detail::require_team_value<T>();
    if (send.size() % size() != 0)
      throw std::invalid_argument("apgas: alltoall's values are not size() blocks of one size");
    return make<std::vector<T>>(detail::collective_kind::alltoall, detail::copy_spec<T>(),
                                send.size() / size(), 0, site, detail::exchanged<T>{send});
  }
  /// @brief Exchange of blocks of any size: send[r] goes to rank r; gives back what each rank
  /// sent here, by rank.
  template <class T>
  APGAS_AWAIT_IT task<std::vector<std::vector<T>>>
  alltoallv(const std::vector<std::vector<T>>& send,
            std::source_location site = std::source_location::current()) const;
  /// @brief Exchange of blocks of any size whose sizes every member knows (MPI_Alltoallv):
  /// `send` holds send_counts[r] elements for rank r, one block after the other, and `recv`
  /// receives recv_counts[r] from rank r likewise. No copies and no exchange of sizes, which
  /// the form above pays for.
  template <class T>
  APGAS_AWAIT_IT task<>
  alltoallv(std::span<const T> send, std::span<const std::size_t> send_counts, std::span<T> recv,
            std::span<const std::size_t> recv_counts,
            std::source_location site = std::source_location::current()) const;

  /// @brief Collective (X10's Team.split): the members that give the same color >= 0 form a
  /// new team, ranked by key (then by their rank here); a member that gives a negative color
  /// gets no team.
  APGAS_AWAIT_IT task<team> split(int color, int key) const;

  /// @brief Collective, for distributed arrays' halo exchanges: this member's sends and
  /// receives, each straight from or into the memory it names (the list and the memory must
  /// stay until the exchange completes). Every member calls it with its own list.
  APGAS_AWAIT_IT awaiter<void, detail::no_buffers>
  exchange_with_neighbours(std::span<const detail::neighbour_transfer> transfers,
                           std::source_location site = std::source_location::current()) const {
    return make<void>(detail::collective_kind::neighbour_exchange, {}, transfers.size(), 0, site,
                      detail::no_buffers{transfers.data(), nullptr});
  }

  /// @brief An id that is the same at every member and different for each call, when every
  /// member calls it at the same point of the team's collective order: for libraries that
  /// build objects over a team (dist_array names its messages with it). Different teams'
  /// ids differ with the likelihood of 64-bit hashes.
  std::uint64_t new_object_id() const;

private:
  explicit team(std::shared_ptr<detail::team_state> s) : m_state(std::move(s)) {}
  const detail::team_state& state() const;

  template <class R, class Buffers>
  awaiter<R, Buffers> make(detail::collective_kind kind, detail::reduction_spec spec,
                           std::size_t count, place_id root, std::source_location site,
                           Buffers buffers) const {
    detail::collective_call c;
    c.kind = kind;
    c.root = root;
    c.count = count;
    c.type = spec.type;
    c.op = spec.op;
    (void)state(); // throws for no team
    return awaiter<R, Buffers>(m_state, c, site, std::move(buffers));
  }

  std::shared_ptr<detail::team_state> m_state;
};

template <class T>
task<std::vector<std::vector<T>>> team::allgatherv(std::span<const T> values,
                                                   std::source_location site) const {
  detail::require_team_value<T>();
  const std::vector<long> counts = co_await allgather(static_cast<long>(values.size()), site);
  detail::varying<T> v(counts);
  v.send = values.data();
  co_await make<void>(detail::collective_kind::allgatherv, detail::copy_spec<T>(), values.size(), 0,
                      site, detail::varying_buffers<T>{&v});
  co_return v.split();
}

template <class T>
task<std::vector<std::vector<T>>> team::alltoallv(const std::vector<std::vector<T>>& send,
                                                  std::source_location site) const {
  detail::require_team_value<T>();
  if (send.size() != size())
    throw std::invalid_argument("apgas: alltoallv needs one block per rank");
  std::vector<long> sizes(send.size());
  for (std::size_t r = 0; r < send.size(); ++r) sizes[r] = static_cast<long>(send[r].size());
  const std::vector<long> counts = co_await alltoall(std::span<const long>(sizes), site);
  detail::varying<T> v(counts);
  v.pack(send);
  co_await make<void>(detail::collective_kind::alltoallv, detail::copy_spec<T>(), 0, 0, site,
                      detail::varying_buffers<T>{&v});
  co_return v.split();
}

template <class T>
task<> team::alltoallv(std::span<const T> send, std::span<const std::size_t> send_counts,
                       std::span<T> recv, std::span<const std::size_t> recv_counts,
                       std::source_location site) const {
  detail::require_team_value<T>();
  if (send_counts.size() != size() || recv_counts.size() != size())
    throw std::invalid_argument("apgas: alltoallv needs a count per rank");
  const detail::block_layout sending(send_counts, send.size());
  const detail::block_layout receiving(recv_counts, recv.size());
  co_await make<void>(detail::collective_kind::alltoallv, detail::copy_spec<T>(), 0, 0, site,
                      detail::flat_varying_buffers{send.data(), recv.data(), &sending, &receiving});
}

} // namespace apgas
