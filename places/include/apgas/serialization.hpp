/// @file Serialization: how values travel between places inside active messages.
///
///     std::vector<std::byte> buf;
///     apgas::byte_writer w(buf);
///     apgas::serialize_all(w, 42, std::string("hi"), std::vector<double>{1.5});
///     apgas::byte_reader r(buf);
///     auto [n, s, v] = apgas::deserialize_all<int, std::string, std::vector<double>>(r);
///
/// What can be sent (`apgas::serializable<T>`):
/// - arithmetic types, enums and other trivially copyable types (copied byte for byte);
/// - std::string, std::vector, std::deque, std::list, std::array, C arrays T[N], std::pair,
///   std::tuple, std::optional, std::variant, std::map, std::multimap, std::unordered_map,
///   std::unordered_multimap, std::set, std::multiset, std::unordered_set and
///   std::unordered_multiset of types that can be sent;
/// - user types that declare how, either with one member template for both directions
///       template <class A> void serialize(A& a) { a & m_x & m_y; }
///   (A is apgas::output_archive or apgas::input_archive, the type must be default
///   constructible), or with two functions found by argument-dependent lookup
///       void apgas_serialize(apgas::byte_writer& w, const T& value);
///       T apgas_deserialize(apgas::byte_reader& r, std::type_identity<T>);
///   A type that declares how is sent that way even if it is trivially copyable.
///
/// Anything else is a compile-time error with a message naming the problem: references, raw
/// pointers (a pointer means nothing at another place: use apgas::global_ref<T>), function
/// pointers, smart pointers, views and iterators, callables (lambdas, std::function), and types
/// that are neither trivially copyable nor declare how. C++ cannot see inside a struct, so a
/// pointer member of a trivially copyable struct goes through unnoticed (and means nothing at
/// the destination): declare serialize() for such structs.
///
/// Wire format. Values are in host byte order and layout: every place runs the same binary on
/// the same architecture, so nothing is converted. Counts are 64-bit; a bool and optional's
/// flag are one byte; a variant's index is 64-bit; a vector<bool> packs 8 elements a byte.
/// There are no type tags: the reader must ask for the types the writer wrote, in order.
///
/// Reading never goes out of bounds: truncated or corrupt input throws
/// apgas::serialization_error. A count is checked against the bytes left (times the fewest
/// bytes an element takes) before anything is allocated, so a corrupt count cannot make the
/// reader allocate more than a genuine message of the same size could. Bools, optional flags
/// and variant indices are checked; the bytes of other trivially copyable values are taken as
/// they come.
#pragma once

#include "apgas/byte_stream.hpp"
#include "apgas/detail/serialization_codec.hpp"
#include "apgas/detail/serialization_traits.hpp"

#include <cstddef>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <tuple>
#include <type_traits>
#include <vector>

namespace apgas {

/// @brief Types that can be sent to another place (see the top of this file); anything else
/// is rejected at compile time by serialize(), deserialize() and friends.
template <class T>
concept serializable = detail::sendable_v<T>;

/// @brief Appends `value` to `w`. Rejected at compile time unless serializable<T>.
/// @throws serialization_error for values that cannot be written (a valueless variant).
template <class T>
void serialize(byte_writer& w, const T& value) {
  detail::diagnose<T>();
  if constexpr (serializable<T>) detail::write_value<std::remove_cv_t<T>>(w, value);
}

/// @brief Reads a T written by serialize(). @throws serialization_error on truncated or
/// corrupt input.
template <class T>
detail::returned_t<T> deserialize(byte_reader& r) {
  detail::diagnose<T>();
  static_assert(!std::is_array_v<T>, "apgas: deserialize<T[N]>() cannot return a C array: use "
                                     "deserialize(reader, array) or std::array<T, N>");
  if constexpr (serializable<T> && !std::is_array_v<T>) {
    return detail::read_value<std::remove_cv_t<T>>(r);
  } else {
    std::terminate(); // not reached: a static_assert above failed
  }
}

/// @brief Reads into `out` (C arrays and user types are read in place).
/// @throws serialization_error on truncated or corrupt input.
template <class T>
void deserialize(byte_reader& r, T& out) {
  detail::diagnose<T>();
  static_assert(!std::is_const_v<T>, "apgas: deserialize(reader, out): out is const");
  if constexpr (serializable<T> && !std::is_const_v<T>) detail::read_into(r, out);
}

/// @brief The number of bytes serialize(w, value) appends (computed without writing, except
/// for user-declared types, which are serialized into a scratch buffer).
template <class T>
std::size_t serialized_size(const T& value) {
  detail::diagnose<T>();
  if constexpr (serializable<T>) return detail::size_value<std::remove_cv_t<T>>(value);
  else return 0;
}

/// @brief Appends every argument in order: the arguments of an active message.
template <class... Args>
void serialize_all(byte_writer& w, const Args&... args) {
  (detail::diagnose<Args>(), ...);
  if constexpr ((serializable<Args> && ...))
    (detail::write_value<std::remove_cv_t<Args>>(w, args), ...);
}

namespace detail {
/// @brief serialize_all with the padding bytes of trivially copyable arguments written as
/// zeros: the bytes that identify a run's parameters (a checkpoint's fingerprint). C++ leaves
/// padding unspecified, so two copies of equal parameters can differ there, and a run resumed
/// with the same parameters would be refused. (Padding inside a container's elements is still
/// written as it is.)
template <class... Args>
void serialize_identity_all(byte_writer& w, const Args&... args) {
  (diagnose<Args>(), ...);
  if constexpr ((serializable<Args> && ...)) {
    const auto one = [&w]<class T>(const T& value) {
      if constexpr (bitwise_copyable<T>) {
        alignas(T) std::byte copy[sizeof(T)];
        std::memcpy(copy, &value, sizeof(T)); // makes a T there (trivially copyable)
        T* const cleared = std::launder(reinterpret_cast<T*>(copy));
#if defined(__has_builtin) && __has_builtin(__builtin_clear_padding) // GCC 11, Clang 16
        __builtin_clear_padding(cleared);
#endif
        write_value<std::remove_cv_t<T>>(w, *cleared);
      } else {
        write_value<std::remove_cv_t<T>>(w, value);
      }
    };
    (one(args), ...);
  }
}
} // namespace detail

/// @brief Reads what serialize_all(w, Args...) wrote, in order.
/// @throws serialization_error on truncated or corrupt input.
template <class... Args>
std::tuple<Args...> deserialize_all(byte_reader& r) {
  (detail::diagnose<Args>(), ...);
  static_assert(!(std::is_array_v<Args> || ...),
                "apgas: deserialize_all cannot return C arrays: use std::array<T, N>");
  if constexpr ((serializable<Args> && ...) && !(std::is_array_v<Args> || ...)) {
    // Braced initialisation evaluates its elements in order.
    return std::tuple<Args...>{detail::read_value<std::remove_cv_t<Args>>(r)...};
  } else {
    std::terminate(); // not reached: a static_assert above failed
  }
}

/// @brief `value` serialized into a new buffer.
template <class T>
std::vector<std::byte> to_bytes(const T& value) {
  byte_writer w;
  serialize(w, value);
  return w.take();
}

/// @brief The T that `bytes` holds, which must be all of them.
/// @throws serialization_error on truncated or corrupt input, or bytes left over.
template <class T>
detail::returned_t<T> from_bytes(std::span<const std::byte> bytes) {
  byte_reader r(bytes);
  if constexpr (std::is_void_v<detail::returned_t<T>>) {
    deserialize<T>(r); // reports why T cannot be returned
  } else {
    detail::returned_t<T> value = deserialize<T>(r);
    r.expect_end();
    return value;
  }
}

template <class T>
output_archive& output_archive::operator&(const T& value) {
  detail::diagnose<T>();
  if constexpr (serializable<T>) detail::write_value<std::remove_cv_t<T>>(*m_writer, value);
  return *this;
}

template <class T>
input_archive& input_archive::operator&(T& value) {
  detail::diagnose<T>();
  static_assert(!std::is_const_v<T>, "apgas: serialize(): cannot read into a const member; "
                                     "drop the const, or use apgas_serialize/apgas_deserialize");
  if constexpr (serializable<T> && !std::is_const_v<T>) detail::read_into(*m_reader, value);
  return *this;
}

} // namespace apgas
