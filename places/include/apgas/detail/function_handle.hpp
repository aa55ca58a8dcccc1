// A pointer to a free (or static member) function, sent to another place: async_at(p, produce, i)
// sends the function's code offset (the same at every place: one binary runs everywhere) as a
// hidden first argument of call_by_pointer, a registered entry point per function type. The
// offset is checked on both sides against the program's symbol table (function_directory.cpp):
// the sender refuses a function no other place can find (a stripped binary, another shared
// library), and the receiver calls only the start of a function of the program, so a damaged
// message fails with an error instead of jumping into the middle of some code.
#pragma once

#include "apgas/detail/message_format.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace apgas::detail {

/// @brief True for a pointer to a function (free or static member), not for a pointer to a
/// non-static member function nor for a function object.
template <class F>
inline constexpr bool is_function_pointer_v =
    std::is_pointer_v<F>&& std::is_function_v<std::remove_pointer_t<F>>;

/// @brief True if a function of this program begins at `fn`, in the object (executable or
/// shared library) that holds the runtime, which has the same layout at every place. The first
/// call reads that object's symbol table. Thread-safety: any thread.
bool named_function(const void* fn) noexcept;

/// @brief Throws std::invalid_argument saying why `fn` cannot be named at other places.
[[noreturn]] void throw_unnamed_function(const void* fn);

/// @brief Throws transport_error: a message from another place names no function at `offset`.
[[noreturn]] void throw_no_function_at(std::int64_t offset);

/// @brief The function `Fn` points to, as other places find it: its code offset. Bitwise, so
/// a stream of plain asyncs of a function pointer still travels in plain runs.
template <class Fn>
struct function_handle {
  static_assert(is_function_pointer_v<Fn>);
  std::int64_t offset;

  /// @throws std::invalid_argument if no other place could find `fn` (see named_function).
  static function_handle of(Fn fn) {
    const void* code = reinterpret_cast<const void*>(fn);
    if (!named_function(code)) [[unlikely]]
      throw_unnamed_function(code);
    return {code_offset(code)};
  }
  /// @brief The function, at the place that received the handle. @throws transport_error if
  /// the offset is not where a function of the program begins (a damaged message).
  Fn function() const {
    const void* code = code_at(offset);
    if (!named_function(code)) [[unlikely]]
      throw_no_function_at(offset);
    return reinterpret_cast<Fn>(const_cast<void*>(code));
  }
};

/// @brief The function object that async_at, at and the collectives send in place of a function
/// pointer `Fn`: it calls the function its first argument names with the other arguments.
template <class Fn>
struct call_by_pointer {
  template <class... X>
  requires std::is_invocable_v<Fn, X&&...> std::invoke_result_t<Fn, X&&...>
  operator()(function_handle<Fn> h, X&&... args) const {
    return h.function()(std::forward<X>(args)...);
  }
};

template <class T>
inline constexpr bool is_function_handle_v = false;
template <class Fn>
inline constexpr bool is_function_handle_v<function_handle<Fn>> = true;

/// @brief How a call object (async_at_call, at_call) keeps an argument until it is awaited:
/// by reference, but a function handle made inside the call by value (it would not outlive
/// the call otherwise).
template <class T>
using kept_arg_t = std::conditional_t<is_function_handle_v<T>, T, T&&>;

} // namespace apgas::detail
