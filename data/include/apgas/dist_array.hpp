/// @file Distributed arrays (X10's DistArray, UPC++'s dist_object of arrays): elements spread
/// over the places of a team, each place holding its part contiguously.
///
///     apgas::team all = apgas::team::world();
///     auto d = apgas::distribution::block(n, all.size());
///     auto a = co_await apgas::dist_array<double>::make(all, d, 1); // 1 ghost cell a side
///     for (double& x : a.local()) x = 1;                   // this place's part
///     co_await a.exchange_halo();                          // one message per neighbour
///     double left = a.ghosts_left()[0];                    // the left neighbour's last cell
///     double x = co_await a.get(12345);                    // any element, from anywhere
///     double total = co_await a.reduce(0.0, apgas::sum);   // over every place
///
///     auto g = co_await apgas::dist_array_2d<double>::make(all, apgas::distribution_2d::block(
///         rows, cols, grid_rows, grid_cols), 1);            // 2D, a grid of parts
///     g(i, j) = ...;                                        // local indices, ghosts at -1 and n
///     co_await g.get(i, 0, std::span(row));                 // a run of global row i
///
/// Making one is collective over its team (every member calls make, in the same order as its
/// other collectives): each member allocates its part (value-initialised, registered for
/// one-sided access) and learns where the others' are. get/put reach any element through
/// rget/rput (no code runs at its owner). With a block distribution, a ghost region of `ghosts`
/// cells on each side (2D: rows above and below, columns left and right; no corners) holds the
/// neighbours' boundary after exchange_halo(), which every member calls together: one message
/// per neighbour per exchange. Destroy an array once no member uses it any more (after a
/// barrier, or at the end of the run).
#pragma once

#include "apgas/distribution.hpp"
#include "apgas/global_ptr.hpp"
#include "apgas/team.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

namespace apgas {

namespace detail {

/// @brief The parts of an array: this member's storage, every member's base and, for an array
/// with ghost cells, a team of the same members for its halo exchanges. Shared by 1D and 2D
/// arrays.
template <class T>
struct array_parts {
  team members;
  registered_array<T> storage;
  std::vector<global_ptr<T>> bases; ///< by team rank
  /// The members again, with a communicator of their own: the exchanges' messages never meet
  /// another array's or the team's collectives, and each exchange's match the one before.
  team halo;

  array_parts(team t, std::size_t cells) : members(std::move(t)), storage(cells) {}

  /// Collective: learns every member's base (and makes the halo team).
  task<> connect(bool ghosts) {
    bases = co_await members.allgather(storage.ptr());
    if (ghosts) halo = co_await members.split(0, static_cast<int>(members.rank()));
  }
};

} // namespace detail

/// @brief A 1D distributed array of T (bitwise) over a team. Move-only. Thread-safety: its
/// local part as any memory; its collectives (make, exchange_halo, reduce) follow the team's
/// rule; get/put from any activity.
template <class T>
class dist_array {
public:
  /// @brief Collective: the array of d.size() elements over `t` (d.parts() == t.size()), with
  /// `ghosts` cells on each side of each part (block distributions only).
  static task<dist_array> make(team t, distribution d, std::size_t ghosts = 0) {
    detail::require_rma_value<T>();
    if (d.parts() != t.size())
      throw std::invalid_argument("apgas: a distribution over another number of parts than "
                                  "the team's places");
    if (ghosts != 0 && d.how() != distribution::kind::block)
      throw std::invalid_argument("apgas: ghost regions need a block distribution");
    dist_array a;
    a.m_dist = d;
    a.m_ghosts = ghosts;
    a.m_rank = t.rank();
    a.m_parts = std::make_unique<detail::array_parts<T>>(t, d.local_size(t.rank()) + 2 * ghosts);
    co_await a.m_parts->connect(ghosts != 0);
    co_return a;
  }

  const distribution& dist() const noexcept { return m_dist; }
  const team& members() const noexcept { return m_parts->members; }
  std::size_t size() const noexcept { return m_dist.size(); }
  /// @brief This place's elements (ghosts excluded), in global index order.
  std::span<T> local() noexcept {
    return m_parts->storage.local().subspan(m_ghosts, m_dist.local_size(m_rank));
  }
  std::span<const T> local() const noexcept {
    return m_parts->storage.local().subspan(m_ghosts, m_dist.local_size(m_rank));
  }
  /// @brief The ghost cells before and after this place's part (filled by exchange_halo).
  std::span<T> ghosts_left() noexcept { return m_parts->storage.local().first(m_ghosts); }
  std::span<T> ghosts_right() noexcept { return m_parts->storage.local().last(m_ghosts); }
  /// @brief The global index of local offset `i`, and back.
  std::size_t global_index(std::size_t i) const noexcept { return m_dist.global_index(m_rank, i); }
  place_id owner(std::size_t global) const noexcept {
    return m_parts->members.place(m_dist.owner(global));
  }

  /// @brief f(global index, element) for every element of this place.
  template <class F>
  void for_each_local(F f) {
    std::span<T> mine = local();
    for (std::size_t i = 0; i < mine.size(); ++i) f(global_index(i), mine[i]);
  }

  /// @brief The element at global index i, from any place.
  APGAS_AWAIT_IT detail::rget_value_awaiter<T> get(std::size_t i) const { return rget(ptr(i)); }
  /// @brief Writes the element at global index i (there when it returns).
  APGAS_AWAIT_IT detail::rput_value_awaiter<T> put(std::size_t i, const T& value) {
    return rput(ptr(i), value);
  }
  /// @brief Elements [first, first + out.size()), from their owners (one rget per owner's
  /// run of them).
  APGAS_AWAIT_IT task<> get(std::size_t first, std::span<T> out) const {
    for (std::size_t i = 0; i < out.size();) {
      const std::size_t n = run_length(first + i, out.size() - i);
      co_await rget(ptr(first + i), out.subspan(i, n));
      i += n;
    }
  }
  /// @brief Writes `values` at [first, first + values.size()).
  APGAS_AWAIT_IT task<> put(std::size_t first, std::span<const T> values) {
    for (std::size_t i = 0; i < values.size();) {
      const std::size_t n = run_length(first + i, values.size() - i);
      co_await rput(ptr(first + i), values.subspan(i, n));
      i += n;
    }
  }

  /// @brief Collective: fills the ghost regions with the neighbours' boundaries (one message
  /// to each neighbour; the ends have no neighbour outside).
  APGAS_AWAIT_IT task<> exchange_halo() {
    if (m_ghosts == 0) co_return;
    detail::array_parts<T>& p = *m_parts;
    std::span<T> mine = local();
    if (mine.size() < m_ghosts)
      throw std::logic_error("apgas: a part smaller than its ghost region");
    // Tags name the receiver's side: 0 its left ghosts, 1 its right ones.
    std::array<detail::neighbour_transfer, 4> t{};
    std::size_t n = 0;
    if (m_rank > 0) {
      t[n++] = {m_rank - 1, 0, false, region(ghosts_left())};
      t[n++] = {m_rank - 1, 1, true, region(mine.first(m_ghosts))};
    }
    if (m_rank + 1 < p.members.size()) {
      t[n++] = {m_rank + 1, 1, false, region(ghosts_right())};
      t[n++] = {m_rank + 1, 0, true, region(mine.last(m_ghosts))};
    }
    co_await p.halo.exchange_with_neighbours(std::span(t.data(), n));
  }

  /// @brief Collective: `op` over every element of the array (init: op's identity).
  template <class Op>
  APGAS_AWAIT_IT task<T> reduce(T init, Op op) const {
    T partial = init;
    for (const T& x : local()) partial = op(partial, x);
    co_return co_await m_parts->members.allreduce(partial, op);
  }

private:
  dist_array() = default;
  static detail::halo_region region(std::span<T> cells) noexcept {
    return {reinterpret_cast<std::byte*>(cells.data()), cells.size_bytes(), 0, 1};
  }
  global_ptr<T> ptr(std::size_t global) const {
    if (global >= m_dist.size()) throw std::out_of_range("apgas: a dist_array index past its end");
    const place_id rank = m_dist.owner(global);
    return m_parts->bases[rank] +
           static_cast<std::ptrdiff_t>(m_ghosts + m_dist.local_index(global));
  }
  /// How many of the `left` indices from `global` are contiguous at one owner.
  std::size_t run_length(std::size_t global, std::size_t left) const {
    if (global >= m_dist.size() || global + left > m_dist.size())
      throw std::out_of_range("apgas: a dist_array range past its end");
    const place_id rank = m_dist.owner(global);
    const std::size_t at = m_dist.local_index(global);
    std::size_t n = 1;
    while (n < left && m_dist.owner(global + n) == rank && m_dist.local_index(global + n) == at + n)
      ++n;
    return n;
  }

  distribution m_dist;
  std::size_t m_ghosts = 0;
  place_id m_rank = 0;
  std::unique_ptr<detail::array_parts<T>> m_parts;
};

/// @brief A 2D distributed array of T over a team: a grid of parts (distribution_2d), each
/// holding its rows x columns row-major, with `ghosts` rows above and below and columns left
/// and right (block distributions). Element (i, j) of the local part is (*this)(i, j); ghosts
/// are at i = -ghosts .. -1 and local_rows() .. (likewise j).
template <class T>
class dist_array_2d {
public:
  static task<dist_array_2d> make(team t, distribution_2d d, std::size_t ghosts = 0) {
    detail::require_rma_value<T>();
    if (d.parts() != t.size())
      throw std::invalid_argument("apgas: a 2D distribution over another number of parts than "
                                  "the team's places");
    if (ghosts != 0 &&
        (d.rows.how() != distribution::kind::block || d.cols.how() != distribution::kind::block))
      throw std::invalid_argument("apgas: ghost regions need a block distribution");
    dist_array_2d a;
    a.m_dist = d;
    a.m_ghosts = ghosts;
    a.m_rank = t.rank();
    a.m_rows = d.local_rows(a.m_rank);
    a.m_cols = d.local_cols(a.m_rank);
    a.m_stride = a.m_cols + 2 * ghosts;
    a.m_parts = std::make_unique<detail::array_parts<T>>(t, (a.m_rows + 2 * ghosts) * a.m_stride);
    co_await a.m_parts->connect(ghosts != 0);
    co_return a;
  }

  const distribution_2d& dist() const noexcept { return m_dist; }
  const team& members() const noexcept { return m_parts->members; }
  std::size_t local_rows() const noexcept { return m_rows; }
  std::size_t local_cols() const noexcept { return m_cols; }
  /// @brief Cells between the start of two rows (the local part's row, ghosts included).
  std::size_t stride() const noexcept { return m_stride; }
  /// @brief The global row and column of local (0, 0).
  std::size_t first_row() const noexcept { return m_dist.rows.first(m_dist.grid_row(m_rank)); }
  std::size_t first_col() const noexcept { return m_dist.cols.first(m_dist.grid_col(m_rank)); }

  /// @brief Local element (i, j); i and j from -ghosts to local_rows()/local_cols() + ghosts - 1.
  T& operator()(std::ptrdiff_t i, std::ptrdiff_t j) noexcept { return *cell(i, j); }
  const T& operator()(std::ptrdiff_t i, std::ptrdiff_t j) const noexcept {
    return *const_cast<dist_array_2d*>(this)->cell(i, j);
  }
  /// @brief Local row i (its local_cols() cells).
  std::span<T> row(std::ptrdiff_t i) noexcept { return {cell(i, 0), m_cols}; }

  /// @brief f(global row, global column, element) for every element of this place.
  template <class F>
  void for_each_local(F f) {
    for (std::size_t i = 0; i < m_rows; ++i)
      for (std::size_t j = 0; j < m_cols; ++j)
        f(m_dist.rows.global_index(m_dist.grid_row(m_rank), i),
          m_dist.cols.global_index(m_dist.grid_col(m_rank), j),
          (*this)(static_cast<std::ptrdiff_t>(i), static_cast<std::ptrdiff_t>(j)));
  }

  /// @brief The element at global (i, j), from any place.
  APGAS_AWAIT_IT detail::rget_value_awaiter<T> get(std::size_t i, std::size_t j) const {
    return rget(ptr(i, j));
  }
  /// @brief Writes the element at global (i, j) (there when it returns).
  APGAS_AWAIT_IT detail::rput_value_awaiter<T> put(std::size_t i, std::size_t j, const T& value) {
    return rput(ptr(i, j), value);
  }
  /// @brief Elements (i, j) .. (i, j + out.size() - 1) of global row i, from their owners (one
  /// rget per owner's run of them).
  APGAS_AWAIT_IT task<> get(std::size_t i, std::size_t j, std::span<T> out) const {
    for (std::size_t k = 0; k < out.size();) {
      const std::size_t n = run_length(i, j + k, out.size() - k);
      co_await rget(ptr(i, j + k), out.subspan(k, n));
      k += n;
    }
  }
  /// @brief Writes `values` at (i, j) .. (i, j + values.size() - 1) of global row i.
  APGAS_AWAIT_IT task<> put(std::size_t i, std::size_t j, std::span<const T> values) {
    for (std::size_t k = 0; k < values.size();) {
      const std::size_t n = run_length(i, j + k, values.size() - k);
      co_await rput(ptr(i, j + k), values.subspan(k, n));
      k += n;
    }
  }

  /// @brief Collective: fills the ghost rows and columns with the neighbours' boundaries (one
  /// message to each of the up to four neighbours; no corners).
  APGAS_AWAIT_IT task<> exchange_halo() {
    if (m_ghosts == 0) co_return;
    detail::array_parts<T>& p = *m_parts;
    if (m_rows < m_ghosts || m_cols < m_ghosts)
      throw std::logic_error("apgas: a part smaller than its ghost region");
    const std::uint32_t gr = m_dist.grid_row(m_rank), gc = m_dist.grid_col(m_rank);
    const auto g = static_cast<std::ptrdiff_t>(m_ghosts);
    const auto rows = static_cast<std::ptrdiff_t>(m_rows);
    const auto cols = static_cast<std::ptrdiff_t>(m_cols);
    // Sides at the receiver: 0 above, 1 below, 2 left, 3 right. The neighbour on our side k
    // fills our ghosts[k], and our boundary[k] fills its side k ^ 1.
    const std::array<bool, 4> exists{gr > 0, gr + 1 < m_dist.rows.parts(), gc > 0,
                                     gc + 1 < m_dist.cols.parts()};
    const std::array<place_id, 4> rank{m_rank - m_dist.cols.parts(), m_rank + m_dist.cols.parts(),
                                       m_rank - 1, m_rank + 1};
    const std::array<detail::halo_region, 4> boundary{
        block(0, 0, g, cols), block(rows - g, 0, g, cols), block(0, 0, rows, g),
        block(0, cols - g, rows, g)};
    const std::array<detail::halo_region, 4> around{block(-g, 0, g, cols), block(rows, 0, g, cols),
                                                    block(0, -g, rows, g), block(0, cols, rows, g)};
    // Tags name the receiver's side.
    std::array<detail::neighbour_transfer, 8> t{};
    std::size_t n = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      if (!exists[k]) continue;
      const auto side = static_cast<std::uint8_t>(k);
      t[n++] = {rank[k], side, false, around[k]};
      t[n++] = {rank[k], static_cast<std::uint8_t>(side ^ 1), true, boundary[k]};
    }
    co_await p.halo.exchange_with_neighbours(std::span(t.data(), n));
  }

  /// @brief Collective: `op` over every element of the array (init: op's identity).
  template <class Op>
  APGAS_AWAIT_IT task<T> reduce(T init, Op op) const {
    T partial = init;
    for (std::size_t i = 0; i < m_rows; ++i)
      for (std::size_t j = 0; j < m_cols; ++j)
        partial =
            op(partial, (*this)(static_cast<std::ptrdiff_t>(i), static_cast<std::ptrdiff_t>(j)));
    co_return co_await m_parts->members.allreduce(partial, op);
  }

private:
  dist_array_2d() = default;
  T* cell(std::ptrdiff_t i, std::ptrdiff_t j) noexcept {
    const auto g = static_cast<std::ptrdiff_t>(m_ghosts);
    return m_parts->storage.local().data() + (i + g) * static_cast<std::ptrdiff_t>(m_stride) + j +
           g;
  }
  /// The rows x cols cells from local (i, j), as runs of bytes.
  detail::halo_region block(std::ptrdiff_t i, std::ptrdiff_t j, std::ptrdiff_t rows,
                            std::ptrdiff_t cols) noexcept {
    return {reinterpret_cast<std::byte*>(cell(i, j)), static_cast<std::size_t>(cols) * sizeof(T),
            m_stride * sizeof(T), static_cast<std::size_t>(rows)};
  }
  global_ptr<T> ptr(std::size_t i, std::size_t j) const {
    if (i >= m_dist.rows.size() || j >= m_dist.cols.size())
      throw std::out_of_range("apgas: a dist_array_2d index past its end");
    const place_id rank = m_dist.owner(i, j);
    const std::size_t stride = m_dist.local_cols(rank) + 2 * m_ghosts;
    const std::size_t li = m_dist.rows.local_index(i) + m_ghosts;
    const std::size_t lj = m_dist.cols.local_index(j) + m_ghosts;
    return m_parts->bases[rank] + static_cast<std::ptrdiff_t>(li * stride + lj);
  }
  /// How many of the `left` elements of row i from column j are contiguous at one owner.
  std::size_t run_length(std::size_t i, std::size_t j, std::size_t left) const {
    if (i >= m_dist.rows.size() || j >= m_dist.cols.size() || j + left > m_dist.cols.size())
      throw std::out_of_range("apgas: a dist_array_2d range past its row's end");
    const std::uint32_t part = m_dist.cols.owner(j);
    const std::size_t at = m_dist.cols.local_index(j);
    std::size_t n = 1;
    while (n < left && m_dist.cols.owner(j + n) == part && m_dist.cols.local_index(j + n) == at + n)
      ++n;
    return n;
  }

  distribution_2d m_dist;
  std::size_t m_ghosts = 0;
  place_id m_rank = 0;
  std::size_t m_rows = 0;
  std::size_t m_cols = 0;
  std::size_t m_stride = 0;
  std::unique_ptr<detail::array_parts<T>> m_parts;
};

} // namespace apgas
