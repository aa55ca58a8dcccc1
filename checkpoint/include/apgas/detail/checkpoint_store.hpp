// A checkpoint directory on a file system every place sees. Its layout:
//
//   DIR/ckpt-000042/manifest      what the checkpoint is of, and each part's size and SHA-256
//   DIR/ckpt-000042/place-000003  the part place 3 wrote
//   DIR/ckpt-000043.partial/      one being written: never read, removed by the next writer
//
// Writing is two-phase: every place writes its part into the .partial directory, then the
// coordinator writes the manifest there and renames the directory to its final name, the one
// step that makes the checkpoint complete (rename is atomic on POSIX file systems). A job that
// dies before that leaves a .partial directory, which a resume ignores. A resume reads the
// complete checkpoint with the highest number, checks its manifest (its own checksum first),
// and each part against the manifest's size and SHA-256 as it is read: a checkpoint that
// fails a check is refused (checkpoint_error), never half used.
#pragma once

#include "apgas/checkpoint.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace apgas::detail::checkpoint {

/// @brief SHA-256 of `bytes`, as 64 hex digits (OpenSSL's libcrypto).
std::string sha256_hex(std::span<const std::byte> bytes);

/// @brief One place's part, as the manifest records it.
struct part_record {
  std::uint64_t bytes = 0;
  std::string sha256;
  template <class A>
  void serialize(A& a) {
    a& bytes& sha256;
  }
};

/// @brief What a checkpoint is of (the manifest's fields).
struct manifest {
  std::string kind;          ///< "glb" or "phases": which layer wrote it and reads it
  std::string fingerprint;   ///< a digest of what the run computes (types and arguments)
  std::string describes;     ///< the same, for people: named in a refusal
  std::uint64_t ordinal = 0; ///< which run of its kind in the job (the first: 1)
  std::uint64_t sequence = 0;
  std::uint32_t places = 0; ///< places that wrote it (one part each)
  std::vector<part_record> parts;
  template <class A>
  void serialize(A& a) {
    a& kind& fingerprint& describes& ordinal& sequence& places& parts;
  }
};

/// @brief Creates `dir` (and its parents) if needed. @throws checkpoint_error if it cannot.
void prepare(const std::string& dir);
/// @brief The number the next checkpoint in `dir` takes: one more than any there (complete or
/// not), so that the newest is always the one with the highest number; 1 in a new directory.
std::uint64_t next_sequence(const std::string& dir);
/// @brief Writes this place's part of checkpoint `seq` (into the .partial directory, created
/// if needed) and flushes it to storage. @return its record for the manifest. @throws
/// checkpoint_error.
part_record write_part(const std::string& dir, std::uint64_t seq, std::uint32_t place,
                       std::span<const std::byte> bytes);
/// @brief Writes a file of checkpoint `seq` that is no part: a view for people's tools,
/// which a resume never reads (so the manifest does not check it). @throws checkpoint_error.
void write_extra(const std::string& dir, std::uint64_t seq, const std::string& name,
                 std::span<const std::byte> bytes);
/// @brief Place 0, once every part is written: writes the manifest, renames the directory to
/// its final name (the checkpoint is complete from here on), then removes the checkpoints,
/// complete or not, of lower numbers. @throws checkpoint_error.
void commit(const std::string& dir, const manifest& m);

/// @brief A complete checkpoint found by find_newest.
struct found {
  std::string path; ///< DIR/ckpt-<seq>
  manifest what;
  template <class A>
  void serialize(A& a) {
    a& path& what;
  }
};
/// @brief The complete checkpoint with the highest number in `dir`, its manifest checked.
/// @throws checkpoint_error if there is none or its manifest is damaged.
found find_newest(const std::string& dir);
/// @brief The bytes of part `place` of `c`, checked against the manifest.
/// @throws checkpoint_error if it is missing, truncated or corrupted.
std::vector<std::byte> read_part(const found& c, std::uint32_t place);

/// @brief The path of a part (for messages and tests).
std::string part_path(const std::string& checkpoint_path, std::uint32_t place);

} // namespace apgas::detail::checkpoint
