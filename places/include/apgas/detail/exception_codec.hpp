// How an exception crosses places: written into a message where it was thrown (or where it
// passes through), read back at the other end with its structure, its types and its places.
// Every protocol that carries a failure uses it: at replies, finish reports, collectives, the
// run's end (and clocks' reductions). The types that keep their type are registered
// (<apgas/remote_exceptions.hpp>); anything else arrives as a remote_exception with its text.
//
// Wire format of one exception (a node):
//   tag u8: 0 a leaf, 1 a multiple_exceptions
//   leaf      origin u32 (where it was thrown), type id u64 (0: unregistered), type name
//             (string), what() (string), fields (u64 length, then what the type's writer wrote)
//   multiple  count u64, then that many nodes
// Every leaf carries its type name and what(), so a reader that does not know its type id (or
// cannot read its fields) still has the text. Nesting is at most k_max_exception_depth deep: a
// writer flattens what lies deeper (the failures are kept, not the finishes between them); a
// reader refuses deeper input, so a damaged message cannot exhaust the stack.
#pragma once

#include "apgas/byte_stream.hpp"
#include "apgas/exceptions.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <typeinfo>
#include <vector>

namespace apgas::detail {

/// @brief multiple_exceptions nested deeper than this travel flattened (see the top).
inline constexpr unsigned k_max_exception_depth = 32;
/// @brief The fewest bytes a node takes (an empty multiple_exceptions): bounds a count.
inline constexpr std::size_t k_min_exception_bytes = 1 + sizeof(std::uint64_t);

/// @brief How a registered exception type E travels (see apgas::register_exception).
struct exception_type {
  const std::type_info* type;        ///< E
  const std::type_info* remote_type; ///< remote<E>: it travels as E again
  /// Writes what E carries beyond its what() (nothing, for a type rebuilt from it).
  void (*write)(byte_writer& w, const std::exception& e);
  /// Rebuilds the exception as remote<E>, from its what() and what `write` wrote.
  std::exception_ptr (*read)(byte_reader& fields, const std::string& what, place_id origin,
                             std::string type_name);
};

/// @brief Registers a type (idempotent). Aborts if another type has the same name (two types
/// of anonymous namespaces of different files, say): one of them would arrive as the other.
/// Thread-safety: any thread.
bool register_exception_type(const exception_type& type) noexcept;

/// @brief Appends `e` to `w`; a failure thrown here is attributed to place `here`, one that
/// came from elsewhere (remote_origin) keeps its place. pre: `e` is not null.
void write_exception(byte_writer& w, const std::exception_ptr& e, place_id here);
/// @brief Reads an exception written by write_exception. @throws serialization_error on
/// truncated or corrupt input (a place not below `places` included).
std::exception_ptr read_exception(byte_reader& r, place_id places);

/// @brief write_exception into a buffer of its own.
std::vector<std::byte> encode_exception(const std::exception_ptr& e, place_id here);
/// @brief read_exception of all of `bytes`. @throws serialization_error.
std::exception_ptr decode_exception(std::span<const std::byte> bytes, place_id places);
/// @brief What `e` is once it crossed from place `here` to another place (to this one, for an
/// async_at of this place whose finish is here too): written, then read back.
std::exception_ptr across_places(const std::exception_ptr& e, place_id here, place_id places);

/// @brief The current exception as one line of text: its type and what() ("std::out_of_range:
/// index 7"; one that came from another place as remote_origin::describe() tells it), a
/// multiple_exceptions with each failure. pre: called inside a catch handler.
std::string describe_current_exception();
/// @brief A type's name as the program spells it ("std::out_of_range").
std::string demangled_name(const std::type_info& type);

} // namespace apgas::detail
