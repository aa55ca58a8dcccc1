// What serialization knows about a type: which kind of codec sends it (serialization_codec.hpp),
// or why it cannot be sent (diagnose(): one static_assert message per reason). The byte streams
// and archives are only declared here: detecting user-declared serialization names them.
//
// Classification order (first match wins):
//   1. references, raw and member pointers, function types, void, T[]     -> rejected
//   2. user-declared: member serialize(A&), or ADL apgas_serialize + apgas_deserialize
//   3. smart pointers; views, iterators and handles into local memory      -> rejected
//   4. bool (checked byte), std containers and vocabulary types, C arrays T[N]
//   5. callable objects (lambdas, std::function, function objects)         -> rejected
//   6. other trivially copyable types                                      -> bytewise
//   7. anything else                                                       -> rejected
// Containers and vocabulary types are checked recursively: std::vector<int*> is rejected as a
// raw pointer (offender_t names the innermost culprit). User-declared types are not looked
// into: their serialize() is checked when it is instantiated (the archive's operator& asserts).
#pragma once

#include <array>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <deque>
#include <functional>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace apgas {

class byte_writer;
class byte_reader;
class output_archive;
class input_archive;

namespace detail {

/// @brief How a type is sent, or why it cannot be.
enum class ser_kind {
  none, ///< verdict_v only: nothing stands in the way
  // Sendable.
  bitwise,     ///< trivially copyable: copied byte for byte
  boolean,     ///< bool: one byte, checked to be 0 or 1 when read
  string,      ///< std::basic_string
  sequence,    ///< std::vector, std::deque, std::list
  vector_bool, ///< std::vector<bool>
  std_array,   ///< std::array<T, N>
  c_array,     ///< T[N]
  pair,        ///< std::pair
  tuple,       ///< std::tuple
  optional,    ///< std::optional
  variant,     ///< std::variant
  map,         ///< std::map, multimap, unordered_map, unordered_multimap
  set,         ///< std::set, multiset, unordered_set, unordered_multiset
  user_member, ///< member template serialize(Archive&)
  user_adl,    ///< ADL apgas_serialize / apgas_deserialize
  // Not sendable.
  bad_reference,
  bad_pointer,
  bad_function_pointer,
  bad_member_pointer,
  bad_unsupported, ///< void, a function type, an array of unknown bound
  bad_smart_pointer,
  bad_view,
  bad_callable,
  bad_not_trivially_copyable,
  bad_member_not_default_constructible,
  bad_member_inherited,
  bad_adl_half,
};

constexpr bool is_bad(ser_kind k) noexcept { return k >= ser_kind::bad_reference; }

// --- Recognising standard templates ------------------------------------------------------

template <class T, template <class...> class Tmpl>
struct is_instance_of : std::false_type {};
template <template <class...> class Tmpl, class... A>
struct is_instance_of<Tmpl<A...>, Tmpl> : std::true_type {};
template <class T, template <class...> class Tmpl>
inline constexpr bool is_instance_of_v = is_instance_of<T, Tmpl>::value;

template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

template <class T>
struct is_std_span : std::false_type {};
template <class T, std::size_t N>
struct is_std_span<std::span<T, N>> : std::true_type {};

template <class T>
struct is_vector_bool : std::false_type {};
template <class A>
struct is_vector_bool<std::vector<bool, A>> : std::true_type {};

template <class T>
inline constexpr bool is_sequence_v =
    is_instance_of_v<T, std::vector> || is_instance_of_v<T, std::deque> ||
    is_instance_of_v<T, std::list>;

template <class T>
inline constexpr bool is_map_v =
    is_instance_of_v<T, std::map> || is_instance_of_v<T, std::multimap> ||
    is_instance_of_v<T, std::unordered_map> || is_instance_of_v<T, std::unordered_multimap>;

template <class T>
inline constexpr bool is_set_v =
    is_instance_of_v<T, std::set> || is_instance_of_v<T, std::multiset> ||
    is_instance_of_v<T, std::unordered_set> || is_instance_of_v<T, std::unordered_multiset>;

template <class T>
inline constexpr bool is_smart_pointer_v =
    is_instance_of_v<T, std::unique_ptr> || is_instance_of_v<T, std::shared_ptr> ||
    is_instance_of_v<T, std::weak_ptr>;

/// @brief Trivially copyable classes that hold an address of this place.
template <class T>
inline constexpr bool is_view_like_v =
    is_std_span<T>::value || is_instance_of_v<T, std::basic_string_view> ||
    is_instance_of_v<T, std::reference_wrapper> || is_instance_of_v<T, std::coroutine_handle> ||
    std::input_or_output_iterator<T>;

/// @brief Lambdas (non-generic), std::function, function objects: a non-template operator(),
/// or callable with no argument. Generic lambdas with arguments escape detection.
template <class T>
concept callable_object = std::is_class_v<T> &&
    (requires { &T::operator(); } || std::is_invocable_v<T&>);

/// @brief Trivially copyable and copy constructible. GCC (unlike CWG1734) calls a class whose
/// copy and move operations are all deleted trivially copyable: std::mutex, std::atomic.
template <class T>
concept bitwise_copyable = std::is_trivially_copyable_v<T> && std::is_copy_constructible_v<T>;

// --- User-declared serialization ---------------------------------------------------------

template <class T>
concept has_member_serialize = requires(T& t, output_archive& out, input_archive& in) {
  t.serialize(out);
  t.serialize(in);
};

template <class M>
struct member_class {
  using type = void;
};
template <class M, class C>
struct member_class<M C::*> {
  using type = C;
};

/// @brief True if T's serialize() template is a base class's (T's own fields would be lost).
/// Only decidable when `&T::template serialize<output_archive>` names one function.
template <class T>
consteval bool serialize_is_inherited() {
  if constexpr (requires { &T::template serialize<output_archive>; }) {
    using member = decltype(&T::template serialize<output_archive>);
    return !std::is_same_v<typename member_class<member>::type, T>;
  } else {
    return false;
  }
}

template <class T>
concept has_adl_serialize = requires(byte_writer& w, const T& value) {
  apgas_serialize(w, value);
};

template <class T>
concept has_adl_deserialize = requires(byte_reader& r) {
  { apgas_deserialize(r, std::type_identity<T>{}) } -> std::same_as<T>;
};

// --- Classification ----------------------------------------------------------------------

template <class T>
consteval ser_kind kind_of() {
  using enum ser_kind;
  if constexpr (std::is_reference_v<T>) return bad_reference;
  else if constexpr (std::is_pointer_v<T>)
    return std::is_function_v<std::remove_pointer_t<T>> ? bad_function_pointer : bad_pointer;
  else if constexpr (std::is_member_pointer_v<T>) return bad_member_pointer;
  else if constexpr (std::is_void_v<T> || std::is_function_v<T> || std::is_unbounded_array_v<T>)
    return bad_unsupported;
  else if constexpr (!std::is_same_v<T, std::remove_cv_t<T>>) return kind_of<std::remove_cv_t<T>>();
  else if constexpr (has_member_serialize<T>) {
    if constexpr (serialize_is_inherited<T>()) return bad_member_inherited;
    else if constexpr (!std::default_initializable<T>) return bad_member_not_default_constructible;
    else return user_member;
  } else if constexpr (has_adl_serialize<T> && has_adl_deserialize<T>) return user_adl;
  else if constexpr (has_adl_serialize<T> || has_adl_deserialize<T>) return bad_adl_half;
  else if constexpr (is_smart_pointer_v<T>) return bad_smart_pointer;
  else if constexpr (is_view_like_v<T>) return bad_view;
  else if constexpr (std::is_same_v<T, bool>) return boolean;
  else if constexpr (is_instance_of_v<T, std::basic_string>) return string;
  else if constexpr (is_vector_bool<T>::value) return vector_bool;
  else if constexpr (is_sequence_v<T>) return sequence;
  else if constexpr (is_std_array<T>::value) return std_array;
  else if constexpr (std::is_bounded_array_v<T>) return c_array;
  else if constexpr (is_instance_of_v<T, std::pair>) return pair;
  else if constexpr (is_instance_of_v<T, std::tuple>) return tuple;
  else if constexpr (is_instance_of_v<T, std::optional>) return optional;
  else if constexpr (is_instance_of_v<T, std::variant>) return variant;
  else if constexpr (is_map_v<T>) return map;
  else if constexpr (is_set_v<T>) return set;
  else if constexpr (callable_object<T>) return bad_callable;
  else if constexpr (bitwise_copyable<T>) return bitwise;
  else return bad_not_trivially_copyable;
}

template <class T>
inline constexpr ser_kind kind_v = kind_of<T>();

// --- The innermost type that cannot be sent ----------------------------------------------

/// @brief Marks "nothing wrong" in offender_t.
struct no_offender {};

template <class... T>
struct type_list {};

/// @brief The types a structural (std or C array) type is made of.
template <class T, ser_kind K = kind_v<T>>
struct parts {
  using type = type_list<>;
};
template <class T>
struct parts<T, ser_kind::sequence> {
  using type = type_list<typename T::value_type>;
};
template <class T>
struct parts<T, ser_kind::std_array> {
  using type = type_list<typename T::value_type>;
};
template <class T>
struct parts<T, ser_kind::c_array> {
  using type = type_list<std::remove_extent_t<T>>;
};
template <class A, class B>
struct parts<std::pair<A, B>, ser_kind::pair> {
  using type = type_list<A, B>;
};
template <class... A>
struct parts<std::tuple<A...>, ser_kind::tuple> {
  using type = type_list<A...>;
};
template <class T>
struct parts<T, ser_kind::optional> {
  using type = type_list<typename T::value_type>;
};
template <class... A>
struct parts<std::variant<A...>, ser_kind::variant> {
  using type = type_list<A...>;
};
template <class T>
struct parts<T, ser_kind::map> {
  using type = type_list<typename T::key_type, typename T::mapped_type>;
};
template <class T>
struct parts<T, ser_kind::set> {
  using type = type_list<typename T::key_type>;
};

template <class T>
struct offender;

template <class List>
struct first_offender {
  using type = no_offender;
};
template <class T, class... Rest>
struct first_offender<type_list<T, Rest...>> {
  using head = typename offender<T>::type;
  using type = std::conditional_t<std::is_same_v<head, no_offender>,
                                  typename first_offender<type_list<Rest...>>::type, head>;
};

template <class T>
struct offender {
  using type =
      typename std::conditional_t<is_bad(kind_v<T>), std::type_identity<T>,
                                  first_offender<typename parts<std::remove_cv_t<T>>::type>>::type;
};

/// @brief T itself or the first type inside it that cannot be sent; no_offender if none.
template <class T>
using offender_t = typename offender<T>::type;

/// @brief True if T and everything inside it can be sent.
template <class T>
inline constexpr bool sendable_v = std::is_same_v<offender_t<T>, no_offender>;

template <class T>
consteval ser_kind verdict() {
  if constexpr (sendable_v<T>) return ser_kind::none;
  else return kind_v<offender_t<T>>;
}

/// @brief Why T cannot be sent (the kind of its offender), or ser_kind::none if it can.
template <class T>
inline constexpr ser_kind verdict_v = verdict<T>();

// --- Properties of sendable types --------------------------------------------------------

/// @brief Sent as its object representation: trivially copyable, or arrays thereof (bool is
/// excluded: its byte is checked on the way in).
template <class T>
consteval bool is_bitwise() {
  constexpr ser_kind k = kind_v<T>;
  if constexpr (k == ser_kind::bitwise) return true;
  else if constexpr (k == ser_kind::std_array) return is_bitwise<typename T::value_type>();
  else if constexpr (k == ser_kind::c_array) return is_bitwise<std::remove_extent_t<T>>();
  else return false;
}

template <class T>
inline constexpr bool is_bitwise_v = is_bitwise<T>();

template <class T>
consteval std::size_t min_size();

template <class... T>
consteval std::size_t min_size_sum(type_list<T...>) {
  return (std::size_t{0} + ... + min_size<T>());
}

/// @brief The fewest bytes a value of T serializes to (0 when unknown: user-declared types).
/// Bounds the element count a message of n bytes can hold, before anything is allocated.
template <class T>
consteval std::size_t min_size() {
  constexpr ser_kind k = kind_v<T>;
  using enum ser_kind;
  if constexpr (k == bitwise) return sizeof(T);
  else if constexpr (k == boolean) return 1;
  else if constexpr (k == string || k == sequence || k == vector_bool || k == map || k == set)
    return sizeof(std::uint64_t);
  else if constexpr (k == std_array)
    return std::tuple_size_v<T> * min_size<typename T::value_type>();
  else if constexpr (k == c_array) return std::extent_v<T> * min_size<std::remove_extent_t<T>>();
  else if constexpr (k == pair || k == tuple) return min_size_sum(typename parts<T>::type{});
  else if constexpr (k == optional) return 1;
  else if constexpr (k == variant) return sizeof(std::uint64_t);
  else return 0;
}

/// @brief One static_assert per reason a type cannot be sent; only the one that applies fires.
template <class T>
consteval void diagnose() {
  constexpr ser_kind k = verdict_v<T>;
  using enum ser_kind;
  static_assert(k != bad_reference,
                "apgas: this type cannot be sent to another place: it is or holds a reference; "
                "send the value, or an apgas::global_ref<T> to the object");
  static_assert(k != bad_pointer,
                "apgas: this type cannot be sent to another place: it is or holds a raw pointer, "
                "which means nothing at another place; use apgas::global_ref<T> to refer to an "
                "object at its home place, or send the value");
  static_assert(k != bad_function_pointer,
                "apgas: this type cannot be sent to another place: it is or holds a function "
                "pointer (code addresses differ between processes); send data and choose the "
                "function at the destination (for remote objects use apgas::global_ref<T>)");
  static_assert(k != bad_member_pointer,
                "apgas: this type cannot be sent to another place: it is or holds a pointer to "
                "member; send an index or a tag instead (or an apgas::global_ref<T>)");
  static_assert(k != bad_unsupported,
                "apgas: this type cannot be sent to another place: void, a function type or an "
                "array of unknown bound (use std::vector<T>)");
  static_assert(k != bad_smart_pointer,
                "apgas: this type cannot be sent to another place: it is or holds a "
                "std::unique_ptr, std::shared_ptr or std::weak_ptr (memory of this place); send "
                "the pointee by value, or use apgas::global_ref<T>");
  static_assert(k != bad_view,
                "apgas: this type cannot be sent to another place: it is or holds a view, "
                "iterator or handle into memory of this place (std::span, std::string_view, an "
                "iterator, std::reference_wrapper, std::coroutine_handle); send an owning copy "
                "(std::vector, std::string) or use apgas::global_ref<T>");
  static_assert(k != bad_callable,
                "apgas: this type cannot be sent to another place: it is or holds a callable "
                "object (lambda, std::function, function object), whose code and captures do not "
                "travel; send plain data and name the function to run (if it is plain data, "
                "declare serialize() for it)");
  static_assert(k != bad_not_trivially_copyable,
                "apgas: type cannot be sent to another place: it (or a type it holds) is not "
                "trivially copyable and declares no serialize(); add `template <class A> void "
                "serialize(A& a) { a & field1 & field2; }`, or ADL functions "
                "apgas_serialize(apgas::byte_writer&, const T&) and "
                "apgas_deserialize(apgas::byte_reader&, std::type_identity<T>)");
  static_assert(k != bad_member_not_default_constructible,
                "apgas: type cannot be sent to another place: it declares serialize() but is not "
                "default constructible (the receiver makes a T{} and reads into it); add a "
                "default constructor, or use apgas_serialize/apgas_deserialize instead");
  static_assert(k != bad_member_inherited,
                "apgas: type cannot be sent to another place: it inherits serialize() from a base "
                "class but declares none itself, so its own fields would be lost; add `template "
                "<class A> void serialize(A& a) { base::serialize(a); a & field1; }`");
  static_assert(k != bad_adl_half,
                "apgas: type cannot be sent to another place: it declares only one of "
                "apgas_serialize(apgas::byte_writer&, const T&) and "
                "apgas_deserialize(apgas::byte_reader&, std::type_identity<T>) -> T; declare both");
}

} // namespace detail
} // namespace apgas
