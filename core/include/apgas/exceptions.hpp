/// @file Exceptions the runtime throws at users, and what an exception that came from another
/// place tells of its origin (remote_origin, remote<E>; which types cross places as themselves
/// is in <apgas/remote_exceptions.hpp>).
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace apgas {

namespace detail {
using place_id = std::uint32_t;
} // namespace detail

/// @brief The exceptions that escaped the activities of one finish, thrown by that finish
/// once all of its activities have terminated (X10's MultipleExceptions).
class multiple_exceptions : public std::exception {
public:
  /// what(): "1 activity failed: <its what()>" or "N activities failed; first: <what()>",
  /// counting and naming the failures inside nested multiple_exceptions (see flattened()); a
  /// failure from another place is named with its place (see remote_origin::describe()).
  explicit multiple_exceptions(std::vector<std::exception_ptr> errors);
  const char* what() const noexcept override { return m_what.c_str(); }
  /// @brief Every exception gathered, in the order they were recorded.
  const std::vector<std::exception_ptr>& exceptions() const noexcept { return m_errors; }
  /// @brief The exceptions gathered, each nested multiple_exceptions (a finish inside a failed
  /// activity) replaced by its own, recursively, in order: the failures themselves.
  std::vector<std::exception_ptr> flattened() const;
  /// @brief Rethrows the first gathered exception (convenient when there is one).
  [[noreturn]] void rethrow_first() const { std::rethrow_exception(m_errors.front()); }

private:
  std::vector<std::exception_ptr> m_errors;
  std::string m_what;
};

/// @brief A bad command-line flag or APGAS_* variable; what() says which and why.
class usage_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// @brief Where an exception that crossed places was thrown: the base of remote<E> and of
/// remote_exception, found with origin_of(). An exception crosses when an activity started by
/// at or async_at (even at this place) fails, and when a run's failure reaches the other places.
class remote_origin {
public:
  /// @brief The place where the exception was thrown (not the places it passed on its way).
  detail::place_id place() const noexcept { return m_place; }
  /// @brief Its type there, demangled: "std::out_of_range".
  const std::string& type_name() const noexcept { return m_type_name; }
  /// @brief Its what() there.
  virtual const char* what_there() const noexcept = 0;
  /// @brief "at place 3: std::out_of_range: index 7": how the runtime names it in messages.
  std::string describe() const;

protected:
  remote_origin(detail::place_id place, std::string type_name) noexcept
      : m_place(place), m_type_name(std::move(type_name)) {}
  remote_origin(const remote_origin&) = default;
  remote_origin& operator=(const remote_origin&) = default;
  ~remote_origin() = default;

private:
  detail::place_id m_place;
  std::string m_type_name;
};

/// @brief An exception of type E thrown at another place, as it arrives here: catch it as E
/// (`catch (const std::out_of_range& e)`, what() as it was there); origin_of(e) tells the
/// place. E is a standard exception type, one of apgas's, or one registered with
/// apgas::register_exception<E>().
template <class E>
class remote final : public E, public remote_origin {
public:
  remote(E&& e, detail::place_id where, std::string type_name)
      : E(std::move(e)), remote_origin(where, std::move(type_name)) {}
  const char* what_there() const noexcept override { return E::what(); }
};

/// @brief Where `e` was thrown if it came from another place (null if it was thrown here).
inline const remote_origin* origin_of(const std::exception& e) noexcept {
  return dynamic_cast<const remote_origin*>(&e);
}

/// @brief The same for an element of multiple_exceptions::flattened(): null if it was thrown
/// here or is no std::exception. The pointer lives as long as the exception `e` holds.
const remote_origin* origin_of(const std::exception_ptr& e) noexcept;

} // namespace apgas
