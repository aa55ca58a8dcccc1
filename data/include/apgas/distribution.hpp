/// @file How the indices of a distributed array are spread over the members of a team.
///
///     auto d = apgas::distribution::block(1000, 4);      // 250 indices per part
///     apgas::place_id part = d.owner(600);               // 2
///     std::size_t at = d.local_index(600);                // 100 in part 2's local part
///     auto c = apgas::distribution::block_cyclic(1000, 4, 16); // blocks of 16, dealt round
///
/// A distribution maps a global index i in [0, size()) to a part (a team rank) and an offset in
/// that part's local part, which holds its indices contiguously in increasing order. `block`
/// gives each part one contiguous range (sizes differ by at most one, the first parts get the
/// extra ones); `cyclic` deals indices one by one; `block_cyclic(b)` deals blocks of b. A 2D
/// distribution is two of them, one per dimension, over a grid of parts (see
/// distribution_2d): its local part is row-major. Everything here is arithmetic, the same at
/// every place.
#pragma once

#include "apgas/detail/serialization_traits.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace apgas {

/// @brief A 1D distribution of `size()` indices over `parts()` parts. A value type: cheap to
/// copy, bitwise (it can be an argument of an async_at). Thread-safety: immutable.
class distribution {
public:
  /// @brief How the indices are dealt.
  enum class kind : std::uint8_t { block, cyclic, block_cyclic };

  /// @brief One contiguous range per part, sizes within one of each other.
  static distribution block(std::size_t size, std::uint32_t parts) {
    return distribution(kind::block, size, parts, 0);
  }
  /// @brief Index i to part i mod parts.
  static distribution cyclic(std::size_t size, std::uint32_t parts) {
    return distribution(kind::cyclic, size, parts, 1);
  }
  /// @brief Blocks of `block` indices, block g to part g mod parts. @throws
  /// std::invalid_argument if block is 0.
  static distribution block_cyclic(std::size_t size, std::uint32_t parts, std::size_t block) {
    if (block == 0) throw std::invalid_argument("apgas: a block-cyclic distribution's block is 0");
    return distribution(kind::block_cyclic, size, parts, block);
  }

  distribution() = default;

  kind how() const noexcept { return m_kind; }
  std::size_t size() const noexcept { return m_size; }
  std::uint32_t parts() const noexcept { return m_parts; }
  /// @brief The block of a block-cyclic distribution (1 for cyclic, 0 for block).
  std::size_t block_size() const noexcept { return m_block; }

  /// @brief The part that holds global index i. pre: i < size().
  std::uint32_t owner(std::size_t i) const noexcept {
    if (m_kind == kind::block) {
      const std::size_t q = m_size / m_parts, r = m_size % m_parts;
      // The first r parts hold q + 1 indices, the others q.
      return i < r * (q + 1) ? static_cast<std::uint32_t>(i / (q + 1))
                             : static_cast<std::uint32_t>(r + (i - r * (q + 1)) / q);
    }
    return static_cast<std::uint32_t>((i / m_block) % m_parts);
  }
  /// @brief Where global index i is in its owner's local part. pre: i < size().
  std::size_t local_index(std::size_t i) const noexcept {
    if (m_kind == kind::block) return i - first(owner(i));
    const std::size_t g = i / m_block; // global block
    return (g / m_parts) * m_block + i % m_block;
  }
  /// @brief The global index of offset `local` of part `part`. pre: local < local_size(part).
  std::size_t global_index(std::uint32_t part, std::size_t local) const noexcept {
    if (m_kind == kind::block) return first(part) + local;
    const std::size_t local_block = local / m_block;
    return (local_block * m_parts + part) * m_block + local % m_block;
  }
  /// @brief How many indices part `part` holds.
  std::size_t local_size(std::uint32_t part) const noexcept {
    if (m_kind == kind::block) return m_size / m_parts + (part < m_size % m_parts ? 1 : 0);
    const std::size_t blocks = m_size / m_block; // whole blocks
    const std::size_t tail = m_size % m_block;   // the last, partial block's length
    std::size_t n = (blocks / m_parts + (part < blocks % m_parts ? 1 : 0)) * m_block;
    if (tail != 0 && blocks % m_parts == part) n += tail;
    return n;
  }
  /// @brief The first global index of a block distribution's part (its range is [first,
  /// first + local_size)). pre: how() == kind::block.
  std::size_t first(std::uint32_t part) const noexcept {
    const std::size_t q = m_size / m_parts, r = m_size % m_parts;
    return part * q + std::min<std::size_t>(part, r);
  }

  friend bool operator==(const distribution&, const distribution&) = default;

private:
  distribution(kind k, std::size_t size, std::uint32_t parts, std::size_t block)
      : m_size(size), m_block(block), m_parts(parts), m_kind(k) {
    if (parts == 0) throw std::invalid_argument("apgas: a distribution over 0 parts");
  }

  std::size_t m_size = 0;
  std::size_t m_block = 0;
  std::uint32_t m_parts = 1;
  kind m_kind = kind::block;
  std::uint8_t m_padding[3] = {}; ///< travels too (a bitwise type has no unset bytes)
};

/// @brief A 2D distribution: rows over the first dimension of a grid of parts (`rows.parts()`
/// of them), columns over the second (`cols.parts()`); part (r, c) is team rank
/// r * cols.parts() + c and holds the rows rows.owner() gives r times the columns cols.owner()
/// gives c, row-major.
struct distribution_2d {
  distribution rows;
  distribution cols;

  /// @brief Block in both dimensions over a grid of `grid_rows` x `grid_cols` parts.
  static distribution_2d block(std::size_t n_rows, std::size_t n_cols, std::uint32_t grid_rows,
                               std::uint32_t grid_cols) {
    return {distribution::block(n_rows, grid_rows), distribution::block(n_cols, grid_cols)};
  }
  /// @brief The grid for `parts` parts closest to square (rows >= cols), for a square array.
  static std::pair<std::uint32_t, std::uint32_t> square_grid(std::uint32_t parts) noexcept {
    std::uint32_t c = 1;
    for (std::uint32_t k = 1; k * k <= parts; ++k)
      if (parts % k == 0) c = k;
    return {parts / c, c};
  }

  std::uint32_t parts() const noexcept { return rows.parts() * cols.parts(); }
  /// @brief The part (team rank) that holds element (i, j).
  std::uint32_t owner(std::size_t i, std::size_t j) const noexcept {
    return rows.owner(i) * cols.parts() + cols.owner(j);
  }
  std::uint32_t grid_row(std::uint32_t part) const noexcept { return part / cols.parts(); }
  std::uint32_t grid_col(std::uint32_t part) const noexcept { return part % cols.parts(); }
  std::size_t local_rows(std::uint32_t part) const noexcept {
    return rows.local_size(grid_row(part));
  }
  std::size_t local_cols(std::uint32_t part) const noexcept {
    return cols.local_size(grid_col(part));
  }
  friend bool operator==(const distribution_2d&, const distribution_2d&) = default;
};

} // namespace apgas
