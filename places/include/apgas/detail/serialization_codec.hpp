// How each kind of sendable type is written, read and sized (serialization_traits.hpp says
// which kind a type is): the wire format described in <apgas/serialization.hpp>, whose
// functions are the only callers.
#pragma once

#include "apgas/byte_stream.hpp"
#include "apgas/detail/serialization_traits.hpp"

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace apgas::detail {

/// @brief What deserialize<T> can be declared to return (void where T cannot be returned, so
/// that the static_assert in its body, not the declaration, reports the problem).
template <class T>
using returned_t = std::conditional_t<std::is_array_v<T> || std::is_function_v<T> ||
                                          std::is_abstract_v<std::remove_reference_t<T>>,
                                      void, T>;

template <class T>
inline constexpr bool always_false_v = false;

/// @brief A random-access iterator over elements of a bitwise type stored in bytes at any
/// alignment (each read with memcpy), so that a vector can be built straight from a message.
template <class E>
class unaligned_elements {
public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = E;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = E;

  unaligned_elements() = default;
  explicit unaligned_elements(const std::byte* at) noexcept : m_at(at) {}
  E operator*() const noexcept {
    E e;
    std::memcpy(&e, m_at, sizeof(E));
    return e;
  }
  E operator[](difference_type i) const noexcept { return *(*this + i); }
  unaligned_elements& operator++() noexcept { return *this += 1; }
  unaligned_elements operator++(int) noexcept { return std::exchange(*this, *this + 1); }
  unaligned_elements& operator--() noexcept { return *this -= 1; }
  unaligned_elements operator--(int) noexcept { return std::exchange(*this, *this - 1); }
  unaligned_elements& operator+=(difference_type i) noexcept {
    m_at += i * static_cast<difference_type>(sizeof(E));
    return *this;
  }
  unaligned_elements& operator-=(difference_type i) noexcept { return *this += -i; }
  friend unaligned_elements operator+(unaligned_elements a, difference_type i) noexcept {
    return a += i;
  }
  friend unaligned_elements operator+(difference_type i, unaligned_elements a) noexcept {
    return a += i;
  }
  friend unaligned_elements operator-(unaligned_elements a, difference_type i) noexcept {
    return a -= i;
  }
  friend difference_type operator-(unaligned_elements a, unaligned_elements b) noexcept {
    return (a.m_at - b.m_at) / static_cast<difference_type>(sizeof(E));
  }
  friend bool operator==(unaligned_elements a, unaligned_elements b) noexcept {
    return a.m_at == b.m_at;
  }
  friend auto operator<=>(unaligned_elements a, unaligned_elements b) noexcept {
    return a.m_at <=> b.m_at;
  }

private:
  const std::byte* m_at = nullptr;
};

template <class T>
void write_value(byte_writer& w, const T& value);
template <class T>
T read_value(byte_reader& r);
template <class T>
void read_into(byte_reader& r, T& out);
template <class T>
std::size_t size_value(const T& value);

template <class T>
T read_bitwise(byte_reader& r) {
  if constexpr (std::is_default_constructible_v<T>) {
    T value;
    r.read_bytes(&value, sizeof(T));
    return value;
  } else {
    std::array<std::byte, sizeof(T)> raw;
    r.read_bytes(raw.data(), sizeof(T));
    return std::bit_cast<T>(raw);
  }
}

/// @brief Writes a count, then the elements; checks that a receiver can bound the count (it
/// cannot if elements write no bytes at all: only user types that write nothing do that).
template <class Element, class Range, class WriteOne>
void write_counted(byte_writer& w, const Range& range, WriteOne write_one) {
  const std::size_t count = std::size(range);
  w.write_length(count);
  const std::size_t start = w.size();
  for (const auto& element : range) write_one(element);
  if constexpr (min_size<Element>() == 0) {
    if (w.size() - start < count) {
      throw serialization_error(
          "apgas: cannot serialize a container of " + std::to_string(count) +
          " elements that take fewer than " + std::to_string(count) +
          " bytes in all (elements that write nothing): the receiver could not bound the count");
    }
  }
}

template <class T>
consteval std::size_t min_element_bytes() {
  return min_size<T>() == 0 ? 1 : min_size<T>();
}

template <class Variant, std::size_t I>
Variant read_alternative(byte_reader& r) {
  using alternative = std::remove_cv_t<std::variant_alternative_t<I, Variant>>;
  return Variant(std::in_place_index<I>, read_value<alternative>(r));
}

template <class Variant, std::size_t... I>
Variant read_variant(byte_reader& r, std::size_t index, std::index_sequence<I...>) {
  using reader_fn = Variant (*)(byte_reader&);
  static constexpr reader_fn k_readers[] = {&read_alternative<Variant, I>...};
  return k_readers[index](r);
}

template <class Tuple, std::size_t... I>
Tuple read_tuple(byte_reader& r, std::index_sequence<I...>) {
  // Braced initialisation evaluates its elements in order.
  return Tuple{read_value<std::remove_cv_t<std::tuple_element_t<I, Tuple>>>(r)...};
}

template <class Array, std::size_t... I>
Array read_std_array(byte_reader& r, std::index_sequence<I...>) {
  using element = typename Array::value_type;
  return Array{{(static_cast<void>(I), read_value<element>(r))...}};
}

template <class T>
void write_value(byte_writer& w, const T& value) {
  constexpr ser_kind k = kind_v<T>;
  using enum ser_kind;
  if constexpr (is_bitwise_v<T>) {
    w.write_bytes(std::addressof(value), sizeof(T));
  } else if constexpr (k == boolean) {
    const std::uint8_t byte = value ? 1 : 0;
    w.write_bytes(&byte, 1);
  } else if constexpr (k == user_member) {
    output_archive archive(w);
    // serialize() is non-const because it also reads; writing does not modify the object.
    const_cast<T&>(value).serialize(archive);
  } else if constexpr (k == user_adl) {
    apgas_serialize(w, value);
  } else if constexpr (k == string) {
    w.write_length_and_bytes(value.size(), value.data(),
                             value.size() * sizeof(typename T::value_type));
  } else if constexpr (k == sequence) {
    using element = typename T::value_type;
    if constexpr (is_bitwise_v<element> && is_instance_of_v<T, std::vector>) {
      w.write_length_and_bytes(value.size(), value.data(), value.size() * sizeof(element));
    } else {
      write_counted<element>(w, value, [&](const element& e) { write_value(w, e); });
    }
  } else if constexpr (k == vector_bool) {
    w.write_length(value.size());
    std::uint8_t byte = 0;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (value[i]) byte = static_cast<std::uint8_t>(byte | (1U << (i % 8)));
      if (i % 8 == 7 || i + 1 == value.size()) {
        w.write_bytes(&byte, 1);
        byte = 0;
      }
    }
  } else if constexpr (k == std_array || k == c_array) {
    for (const auto& e : value) write_value(w, e);
  } else if constexpr (k == pair) {
    write_value(w, value.first);
    write_value(w, value.second);
  } else if constexpr (k == tuple) {
    std::apply([&](const auto&... e) { (write_value(w, e), ...); }, value);
  } else if constexpr (k == optional) {
    const std::uint8_t flag = value.has_value() ? 1 : 0;
    w.write_bytes(&flag, 1);
    if (value) write_value(w, *value);
  } else if constexpr (k == variant) {
    if (value.valueless_by_exception())
      throw serialization_error("apgas: cannot serialize a valueless std::variant");
    w.write_length(value.index());
    std::visit([&](const auto& alternative) { write_value(w, alternative); }, value);
  } else if constexpr (k == map) {
    using key = typename T::key_type;
    using mapped = typename T::mapped_type;
    write_counted<std::pair<key, mapped>>(w, value, [&](const auto& entry) {
      write_value(w, entry.first);
      write_value(w, entry.second);
    });
  } else if constexpr (k == set) {
    using key = typename T::key_type;
    write_counted<key>(w, value, [&](const key& e) { write_value(w, e); });
  } else {
    static_assert(always_false_v<T>, "apgas: internal error: no writer for this kind");
  }
}

template <class T>
T read_value(byte_reader& r) {
  constexpr ser_kind k = kind_v<T>;
  using enum ser_kind;
  if constexpr (k == c_array) {
    static_assert(always_false_v<T>, "apgas: a C array cannot be returned by value: use "
                                     "deserialize(reader, array) or std::array<T, N>");
  } else if constexpr (is_bitwise_v<T>) {
    return read_bitwise<T>(r);
  } else if constexpr (k == boolean) {
    const auto byte = read_bitwise<std::uint8_t>(r);
    if (byte > 1) r.fail("a bool byte of " + std::to_string(byte));
    return byte == 1;
  } else if constexpr (k == user_member) {
    T value{};
    input_archive archive(r);
    value.serialize(archive);
    return value;
  } else if constexpr (k == user_adl) {
    return apgas_deserialize(r, std::type_identity<T>{});
  } else if constexpr (k == string) {
    using char_type = typename T::value_type;
    const std::size_t n = r.read_length(sizeof(char_type));
    T s;
    s.resize(n);
    r.read_bytes(s.data(), n * sizeof(char_type));
    return s;
  } else if constexpr (k == sequence) {
    using element = typename T::value_type;
    if constexpr (is_bitwise_v<element> && is_instance_of_v<T, std::vector> &&
                  std::is_default_constructible_v<element>) {
      const std::size_t n = r.read_length(sizeof(element));
      const std::span<const std::byte> bytes = r.read_span(n * sizeof(element));
      if constexpr (std::is_trivially_default_constructible_v<element>) {
        // Zero-filled, then copied over: two passes, but a memset and a memcpy, which beat one
        // pass of unaligned reads element by element (that loop does not vectorize at -O2).
        T v(n);
        if (n != 0) std::memcpy(v.data(), bytes.data(), bytes.size());
        return v;
      } else {
        // Element constructors would run before the copy: one pass instead.
        return T(unaligned_elements<element>(bytes.data()),
                 unaligned_elements<element>(bytes.data() + bytes.size()));
      }
    } else {
      const std::size_t n = r.read_length(min_element_bytes<element>());
      T c;
      if constexpr (requires { c.reserve(n); }) c.reserve(n);
      for (std::size_t i = 0; i < n; ++i) c.push_back(read_value<element>(r));
      return c;
    }
  } else if constexpr (k == vector_bool) {
    const auto n = read_bitwise<std::uint64_t>(r);
    if (n / 8 + (n % 8 != 0 ? 1 : 0) > r.remaining())
      r.fail("a vector<bool> of " + std::to_string(n) + " elements, but only " +
             std::to_string(r.remaining()) + " bytes are left");
    const std::span<const std::byte> bits = r.read_span(static_cast<std::size_t>((n + 7) / 8));
    T v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = ((std::to_integer<unsigned>(bits[i / 8]) >> (i % 8)) & 1U) != 0;
    return v;
  } else if constexpr (k == std_array) {
    using element = typename T::value_type;
    if constexpr (std::is_default_constructible_v<element>) {
      T a;
      for (auto& e : a) read_into(r, e);
      return a;
    } else {
      return read_std_array<T>(r, std::make_index_sequence<std::tuple_size_v<T>>{});
    }
  } else if constexpr (k == pair) {
    using first = std::remove_cv_t<typename T::first_type>;
    using second = std::remove_cv_t<typename T::second_type>;
    return T{read_value<first>(r), read_value<second>(r)}; // braces: in order
  } else if constexpr (k == tuple) {
    return read_tuple<T>(r, std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (k == optional) {
    const auto flag = read_bitwise<std::uint8_t>(r);
    if (flag > 1) r.fail("an optional flag of " + std::to_string(flag));
    if (flag == 0) return T{};
    return T(std::in_place, read_value<typename T::value_type>(r));
  } else if constexpr (k == variant) {
    const auto index = read_bitwise<std::uint64_t>(r);
    constexpr std::size_t alternatives = std::variant_size_v<T>;
    if (index >= alternatives)
      r.fail("a variant index of " + std::to_string(index) + " for " +
             std::to_string(alternatives) + " alternatives");
    return read_variant<T>(r, static_cast<std::size_t>(index),
                           std::make_index_sequence<alternatives>{});
  } else if constexpr (k == map) {
    using key = typename T::key_type;
    using mapped = typename T::mapped_type;
    const std::size_t n = r.read_length(min_element_bytes<std::pair<key, mapped>>());
    T m;
    if constexpr (requires { m.reserve(n); }) m.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      key entry_key = read_value<key>(r);
      mapped entry_value = read_value<mapped>(r);
      m.emplace_hint(m.end(), std::move(entry_key), std::move(entry_value));
    }
    return m;
  } else if constexpr (k == set) {
    using key = typename T::key_type;
    const std::size_t n = r.read_length(min_element_bytes<key>());
    T s;
    if constexpr (requires { s.reserve(n); }) s.reserve(n);
    for (std::size_t i = 0; i < n; ++i) s.emplace_hint(s.end(), read_value<key>(r));
    return s;
  } else {
    static_assert(always_false_v<T>, "apgas: internal error: no reader for this kind");
  }
}

template <class T>
void read_into(byte_reader& r, T& out) {
  constexpr ser_kind k = kind_v<T>;
  if constexpr (k == ser_kind::c_array || k == ser_kind::std_array) {
    if constexpr (is_bitwise_v<T>) r.read_bytes(std::addressof(out), sizeof(T));
    else
      for (auto& e : out) read_into(r, e);
  } else if constexpr (k == ser_kind::user_member) {
    input_archive archive(r);
    out.serialize(archive);
  } else {
    out = read_value<T>(r);
  }
}

template <class T>
std::size_t size_value(const T& value) {
  constexpr ser_kind k = kind_v<T>;
  using enum ser_kind;
  constexpr std::size_t count_bytes = sizeof(std::uint64_t);
  if constexpr (is_bitwise_v<T>) {
    return sizeof(T);
  } else if constexpr (k == boolean) {
    return 1;
  } else if constexpr (k == user_member || k == user_adl) {
    std::vector<std::byte> scratch; // user code decides: serialize for real
    byte_writer w(scratch);
    write_value(w, value);
    return scratch.size();
  } else if constexpr (k == string) {
    return count_bytes + value.size() * sizeof(typename T::value_type);
  } else if constexpr (k == sequence || k == set) {
    using element = typename T::value_type;
    if constexpr (is_bitwise_v<element>) {
      return count_bytes + value.size() * sizeof(element);
    } else {
      std::size_t n = count_bytes;
      for (const auto& e : value) n += size_value(e);
      return n;
    }
  } else if constexpr (k == vector_bool) {
    return count_bytes + (value.size() + 7) / 8;
  } else if constexpr (k == std_array || k == c_array) {
    std::size_t n = 0;
    for (const auto& e : value) n += size_value(e);
    return n;
  } else if constexpr (k == pair) {
    return size_value(value.first) + size_value(value.second);
  } else if constexpr (k == tuple) {
    return std::apply([](const auto&... e) { return (std::size_t{0} + ... + size_value(e)); },
                      value);
  } else if constexpr (k == optional) {
    return 1 + (value ? size_value(*value) : 0);
  } else if constexpr (k == variant) {
    if (value.valueless_by_exception())
      throw serialization_error("apgas: cannot serialize a valueless std::variant");
    return count_bytes + std::visit([](const auto& a) { return size_value(a); }, value);
  } else if constexpr (k == map) {
    std::size_t n = count_bytes;
    for (const auto& [key, mapped] : value) n += size_value(key) + size_value(mapped);
    return n;
  } else {
    static_assert(always_false_v<T>, "apgas: internal error: no size for this kind");
  }
}

} // namespace apgas::detail
