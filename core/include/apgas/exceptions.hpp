/// @file Exceptions the runtime throws at users.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace apgas {

/// @brief The exceptions that escaped the activities of one finish, thrown by that finish
/// once all of its activities have terminated (X10's MultipleExceptions).
class multiple_exceptions : public std::exception {
public:
  /// what(): "1 activity failed: <its what()>" or "N activities failed; first: <what()>",
  /// counting and naming the failures inside nested multiple_exceptions (see flattened()).
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

} // namespace apgas
