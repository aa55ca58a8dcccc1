// The files of a phased program's checkpoint (apgas/phase_checkpoint.hpp), in HDF5:
//
//   DIR/ckpt-000042/place-000003  team rank 3's HDF5 file: its part of each array (a dataset
//                                 named as the array, local rows x columns, with the array's
//                                 distribution in attributes); rank 0's also holds the values
//                                 (datasets apgas_value:<name>, their serialized bytes)
//   DIR/ckpt-000042/arrays.h5     each array as one virtual dataset over the parts, for users'
//                                 tools; a resume never reads it
//   DIR/ckpt-000042/manifest      as for every checkpoint (checkpoint_store.hpp)
//
// HDF5 without MPI: each member builds its file in memory and hands the bytes to the
// checkpoint store, which writes, checks and commits them as any checkpoint's parts. Parallel
// HDF5 would make every member call MPI's collective file operations, which would block a
// worker in MPI outside the transport that owns MPI here, and could hang a place whose
// neighbour waits for an answer from it; per-member files plus a virtual dataset give users one
// array all the same.
#pragma once

#include "apgas/detail/checkpoint_store.hpp"
#include "apgas/distribution.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace apgas {
struct checkpoint_settings;
}

namespace apgas::detail::checkpoint {

/// @brief The element types an array in a checkpoint may have: those HDF5 and users' tools
/// know.
enum class element_type : std::uint8_t { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };

template <class T>
constexpr element_type element_type_of() {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
                    !std::is_same_v<T, long double>,
                "apgas::saved: an array in a checkpoint must hold numbers (integers, float or "
                "double), which HDF5 and users' tools can read");
  if constexpr (std::is_floating_point_v<T>)
    return sizeof(T) == 4 ? element_type::f32 : element_type::f64;
  else if constexpr (sizeof(T) == 1)
    return std::is_signed_v<T> ? element_type::i8 : element_type::u8;
  else if constexpr (sizeof(T) == 2)
    return std::is_signed_v<T> ? element_type::i16 : element_type::u16;
  else if constexpr (sizeof(T) == 4)
    return std::is_signed_v<T> ? element_type::i32 : element_type::u32;
  else return std::is_signed_v<T> ? element_type::i64 : element_type::u64;
}

/// @brief One member's part of an array: rows x cols elements, row-major, `stride` elements
/// from one row's start to the next's (1D arrays: one row). `data` is null when it is empty.
struct local_part {
  element_type type;
  int dims;          ///< 1 or 2
  distribution rows; ///< 1D: the array's distribution
  distribution cols; ///< 1D: one column
  void* data;
  std::size_t n_rows;
  std::size_t n_cols;
  std::size_t stride;
};

/// @brief What a program's checkpoints are: from the runtime's options, and its fingerprint.
struct phase_plan {
  std::string dir;         ///< --checkpoint: where to save; empty: no saves
  double every = 0;        ///< --checkpoint-every
  std::string resume_from; ///< --resume; empty: a fresh start
  std::string describes;   ///< the program's name
  std::string fingerprint; ///< SHA-256 of the name and the parameters
  /// @throws checkpoint_error if settings.dir cannot be made.
  static phase_plan make(checkpoint_settings settings, std::string program,
                         std::span<const std::byte> parameters);
};

/// @brief The checkpoint a job resumes from, as rank 0 found it: every member gets a copy.
struct resumed {
  found where; ///< the checkpoint's directory and manifest
  std::uint64_t phase = 0;
  std::map<std::string, std::vector<std::byte>> values;
  /// Each array's dimensions, row and column distributions (kind, size, parts, block) and
  /// element type, as part 0 records them.
  std::map<std::string, std::vector<std::uint64_t>> layouts;
  template <class A>
  void serialize(A& a) {
    a& where& phase& values& layouts;
  }
  /// @throws checkpoint_error if the checkpoint holds no value `name`.
  const std::vector<std::byte>& value(const std::string& name) const;
  /// @brief Rank 0: reads the newest complete checkpoint in `plan.resume_from` and its values.
  /// @throws checkpoint_error if there is none, or it is damaged, or of another computation.
  static resumed find(const phase_plan& plan);
};

/// @brief This member's HDF5 file of one checkpoint, built in memory.
class part_writer {
public:
  part_writer(const phase_plan& plan, std::uint64_t phase, std::uint32_t rank, std::uint32_t ranks);
  ~part_writer();
  part_writer(const part_writer&) = delete;
  part_writer& operator=(const part_writer&) = delete;

  /// @throws std::invalid_argument if an array or value of this name was added already.
  void add_array(const std::string& name, const local_part& part);
  void add_value(const std::string& name, std::span<const std::byte> bytes);
  /// @brief The file's bytes (after which nothing may be added).
  std::vector<std::byte> image();
  std::uint64_t phase() const noexcept { return m_phase; }
  /// @brief The arrays added, for the view rank 0 writes.
  const std::vector<std::pair<std::string, local_part>>& arrays() const noexcept {
    return m_arrays;
  }

private:
  struct file;
  std::unique_ptr<file> m_file;
  std::uint64_t m_phase;
  std::vector<std::pair<std::string, local_part>> m_arrays;
};

/// @brief arrays.h5 of a checkpoint written by `ranks` members: each of `arrays` (rank 0's
/// parts: the global shapes and distributions) as a virtual dataset over place-NNNNNN.
std::vector<std::byte> view_image(const std::vector<std::pair<std::string, local_part>>& arrays,
                                  std::uint32_t ranks, std::uint64_t phase,
                                  const std::string& describes);

/// @brief The parts of the resumed checkpoint that a load reads, each read and checked once.
class part_cache {
public:
  explicit part_cache(const resumed& from);
  ~part_cache();
  /// @brief Fills `into` (this member's part of an array with any distribution over the
  /// same team) with the elements of array `name`. @throws checkpoint_error.
  void load_array(const std::string& name, const local_part& into, std::uint32_t rank);
  /// @brief Checks the parts `rank`, `rank + ranks`, ... that this cache has not read (size
  /// and SHA-256 against the manifest). @throws checkpoint_error.
  void verify_share(std::uint32_t rank, std::uint32_t ranks);

private:
  struct opened;
  const opened& part(std::uint32_t old_rank);
  const resumed& m_from;
  std::map<std::uint32_t, std::unique_ptr<opened>> m_open;
};

/// @brief The file name of the virtual datasets' view in a checkpoint.
inline constexpr const char* k_view_file = "arrays.h5";

} // namespace apgas::detail::checkpoint
