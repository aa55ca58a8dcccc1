// Which build of the program a place runs. A function travels between places as its offset
// from code_anchor (message_format.hpp), and message kinds are numbered as modules register,
// so every place must run the same binary: in a stale copy on one node an offset names another
// function (or none: the code registry then refuses the message, in the middle of a run). The
// runtime's start-up gathers every place's identity and ends the job with a message naming
// the places if they differ, before any message is sent.
#pragma once

#include "apgas/detail/transport.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace apgas::detail {

/// @brief The identity of the binary that holds the runtime's code (the program, apgas being
/// linked in statically): a hash of its ELF build-id (GCC and Clang on Linux link one by
/// default), else of the file's bytes. Equal for byte-identical builds only. Computed once;
/// thread-safe.
std::uint64_t build_identity();

/// @brief The file of that binary, for messages ("" if unknown). Thread-safe.
const std::string& build_path();

/// @brief Place 0's report of `identities` (one per place, in place order): "" if they are
/// all equal, else one line naming each build and the places that run it.
std::string describe_build_mismatch(std::span<const std::uint64_t> identities);
} // namespace apgas::detail
