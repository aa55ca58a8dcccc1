// How protocol modules lay out the head of a message: scalars packed in their native bytes, and
// functions named by their offset in the binary (the same at every place: one binary runs
// everywhere). Shared by every module; knows nothing of any protocol.
#pragma once

#include "apgas/detail/transport.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace apgas::detail {

/// @brief A message kind: the first byte of every logical message, given to a protocol module
/// when it registers a handler (see message_dispatcher::add_handler).
using message_kind = std::uint8_t;

/// @brief Writes fields in their native bytes, exactly as serialize() writes scalars (the
/// receiver may read them with deserialize), in one pass without a vector append per field.
template <class... T>
inline void pack_into(std::byte* at, const T&... fields) noexcept {
  static_assert((std::is_trivially_copyable_v<T> && ...));
  ((std::memcpy(at, &fields, sizeof(T)), at += sizeof(T)), ...);
}

/// @brief pack_into a new array of exactly the fields' size.
template <class... T>
inline auto pack_head(const T&... fields) noexcept {
  std::array<std::byte, (sizeof(T) + ...)> head;
  pack_into(head.data(), fields...);
  return head;
}

/// @brief Reads fields written by pack_into, in the same order. pre: the bytes are there (one
/// bounds check by the caller for all of them, e.g. byte_reader::read_span).
template <class... T>
inline void unpack_from(const std::byte* at, T&... fields) noexcept {
  static_assert((std::is_trivially_copyable_v<T> && ...));
  ((std::memcpy(&fields, at, sizeof(T)), at += sizeof(T)), ...);
}

/// @brief Makes `out` room for the transport's frame header followed by `fields`, packed:
/// one resize (which shrinks a reused buffer without a fill) and one copy. The message is
/// then sent with transport::send_now_framed, or from k_frame_header on with send().
template <class... T>
inline void start_framed(std::vector<std::byte>& out, const T&... fields) {
  const auto head = pack_head(fields...);
  out.resize(k_frame_header + head.size());
  std::memcpy(out.data() + k_frame_header, head.data(), head.size());
}

/// @brief The function that code offsets are measured from (a function of this library).
[[gnu::noinline]] void code_anchor() noexcept;

/// @brief Position of a function in this binary, the same at every place.
inline std::int64_t code_offset(const void* fn) noexcept {
  return reinterpret_cast<std::intptr_t>(fn) -
         reinterpret_cast<std::intptr_t>(reinterpret_cast<const void*>(&code_anchor));
}

/// @brief The function at a code offset (see code_offset).
inline const void* code_at(std::int64_t offset) noexcept {
  return reinterpret_cast<const void*>(
      reinterpret_cast<std::intptr_t>(reinterpret_cast<const void*>(&code_anchor)) + offset);
}

} // namespace apgas::detail
