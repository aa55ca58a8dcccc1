// The functions a message may name by code offset (message_format.hpp): every remote entry
// point (the invoker of an async_at, an at, a plain async or a plain run, an rpc, an aggregator's
// batch; a clock reduction's combine) registers itself before main, and a received offset is
// checked against the registry before anything jumps to it. A damaged or hostile message then fails
// with an error instead of running whatever code its bytes point to.
#pragma once

#include <cstdint>

namespace apgas::detail {

/// @brief What a registered function is, so that an offset of one kind is not taken for
/// another (they take different arguments).
enum class code_kind : std::uint8_t { async, plain_async, plain_run, at, rpc, combine, batch };

/// @brief Registers `fn` as an entry point of kind `kind`. Called from static initialisers.
/// @return true (for the initialiser's variable).
bool register_code(const void* fn, code_kind kind) noexcept;

/// @brief True if the function at `offset` (see code_offset) was registered as `kind`.
/// Thread-safety: any thread, once main has begun (registrations happen before).
bool registered_code(std::int64_t offset, code_kind kind) noexcept;

/// @brief Registers Fn (of kind K) before main when the program uses it: name
/// `registered_entry<Fn, K>::value` (odr-use) where the function's offset is taken.
template <auto Fn, code_kind K>
struct registered_entry {
  static inline const bool value = register_code(reinterpret_cast<const void*>(Fn), K);
};

/// @brief The offset of Fn, which registers it (see registered_entry).
template <auto Fn, code_kind K>
inline const void* entry_point() noexcept {
  (void)registered_entry<Fn, K>::value;
  return reinterpret_cast<const void*>(Fn);
}

} // namespace apgas::detail
