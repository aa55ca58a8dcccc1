// An exception type of a user's, for the tests of exceptions across places: registered, and
// travelling whole (a field of its own beside its what()), as an argument does. Its fields
// refuse to be read back when the code is negative (a damaged message, as far as they know).
#pragma once

#include <apgas/remote_exceptions.hpp>
#include <apgas/serialization.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>

class coded_error : public std::runtime_error {
public:
  coded_error(const std::string& what, int code) : std::runtime_error(what), m_code(code) {}
  int code() const noexcept { return m_code; }
  friend void apgas_serialize(apgas::byte_writer& w, const coded_error& e) {
    apgas::serialize_all(w, std::string(e.what()), e.m_code);
  }
  friend coded_error apgas_deserialize(apgas::byte_reader& r, std::type_identity<coded_error>) {
    auto [what, code] = apgas::deserialize_all<std::string, int>(r);
    if (code < 0) r.fail("a negative code");
    return coded_error(what, code);
  }

private:
  int m_code;
};
APGAS_REGISTER_EXCEPTION(coded_error);
