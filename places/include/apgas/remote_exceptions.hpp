/// @file Exceptions across places. An exception thrown by an activity that at or async_at
/// started (at any place, this one included) reaches its caller or its finish as an object of
/// its own type when the type is known: `apgas::remote<E>`, which derives from E and from
/// apgas::remote_origin (<apgas/exceptions.hpp>), so
///
///     try { co_await apgas::at(p, [] { return v.at(7); }); }
///     catch (const std::out_of_range& e) { apgas::origin_of(e)->place(); }   // == p
///
/// Known types: the standard ones (std::logic_error, domain_error, invalid_argument,
/// length_error, out_of_range, std::runtime_error, range_error, overflow_error,
/// underflow_error, std::bad_alloc), apgas's own (bad_place, usage_error, serialization_error,
/// clock_use_exception; multiple_exceptions keeps its structure, each failure its place) and
/// those registered with register_exception<E>(). A type is matched exactly: an unregistered
/// class derived from std::runtime_error is not a runtime_error there. Anything else arrives
/// as a remote_exception, with its type's name and its what().
#pragma once

#include "apgas/detail/exception_codec.hpp"
#include "apgas/exceptions.hpp"
#include "apgas/serialization.hpp"

#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace apgas {

/// @brief An exception thrown at another place whose type did not survive the trip (it is
/// not registered, or not a std::exception): its place, its type's name and its what().
class remote_exception : public std::runtime_error, public remote_origin {
public:
  /// what(): "at place <where>: <type_name>: <what_there>".
  remote_exception(detail::place_id where, std::string type_name, std::string what_there);
  /// what(): "at place <where>: <text>".
  remote_exception(detail::place_id where, const std::string& text)
      : remote_exception(where, std::string(), text) {}
  /// @brief The exception as that place described it: "<type_name>: <what_there>".
  const std::string& text() const noexcept { return m_text; }
  const char* what_there() const noexcept override { return m_what_there.c_str(); }

private:
  std::string m_what_there;
  std::string m_text;
};

namespace detail {

template <class E>
void write_exception_fields([[maybe_unused]] byte_writer& w,
                            [[maybe_unused]] const std::exception& e) {
  if constexpr (serializable<E>) serialize(w, dynamic_cast<const E&>(e)); // E or remote<E>
}

template <class E>
std::exception_ptr read_remote_exception([[maybe_unused]] byte_reader& fields,
                                         [[maybe_unused]] const std::string& what, place_id origin,
                                         std::string type_name) {
  E e = [&] {
    if constexpr (serializable<E>) return deserialize<E>(fields);
    else if constexpr (std::is_constructible_v<E, const std::string&>) return E(what);
    else return E();
  }();
  return std::make_exception_ptr(remote<E>(std::move(e), origin, std::move(type_name)));
}

} // namespace detail

/// @brief Makes exceptions of type E (exactly) arrive at other places as remote<E>. E travels
/// as an argument does if it is serializable (a serialize() member, or apgas_serialize and
/// apgas_deserialize: see <apgas/serialization.hpp>); otherwise it is rebuilt from its what()
/// if it has a constructor from a std::string (its other fields are lost), else default
/// constructed. Register a type at every place before it may cross: from a static
/// initialiser (APGAS_REGISTER_EXCEPTION), which every place of one binary runs.
/// Registering a type twice is harmless. Thread-safety: any thread.
/// @return true (for the initialiser's variable).
template <class E>
bool register_exception() {
  static_assert(std::is_class_v<E> && std::is_base_of_v<std::exception, E>,
                "apgas::register_exception<E>: E must derive from std::exception");
  static_assert(!std::is_final_v<E> && !std::is_abstract_v<E>,
                "apgas::register_exception<E>: E must be neither final nor abstract (it arrives "
                "as apgas::remote<E>, which derives from it)");
  static_assert(std::is_copy_constructible_v<E>,
                "apgas::register_exception<E>: E must be copy constructible (as anything thrown)");
  static_assert(serializable<E> || std::is_constructible_v<E, const std::string&> ||
                    std::is_default_constructible_v<E>,
                "apgas::register_exception<E>: declare how E is serialized (a serialize() "
                "member, or apgas_serialize and apgas_deserialize, as for an argument), or give "
                "it a constructor from its what() string");
  return detail::register_exception_type({&typeid(E), &typeid(remote<E>),
                                          &detail::write_exception_fields<E>,
                                          &detail::read_remote_exception<E>});
}

} // namespace apgas

#define APGAS_DETAIL_CONCAT2(a, b) a##b
#define APGAS_DETAIL_CONCAT(a, b) APGAS_DETAIL_CONCAT2(a, b)
/// @brief Registers exception type `...` (see apgas::register_exception) from a static
/// initialiser; at namespace scope, in a source file of the program.
#define APGAS_REGISTER_EXCEPTION(...)                                                              \
  [[maybe_unused]] static const bool APGAS_DETAIL_CONCAT(                                          \
      apgas_exception_registered_, __COUNTER__) = ::apgas::register_exception<__VA_ARGS__>()
