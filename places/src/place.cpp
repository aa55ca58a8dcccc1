// The out-of-line parts of <apgas/place.hpp>: its exceptions, here() and places().
#include "apgas/place.hpp"

#include "apgas/exceptions.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <typeinfo>

namespace apgas {

bad_place::bad_place(place_id p, place_id count)
    : std::out_of_range(fmt::format("apgas: place {} does not exist (places are 0 to {})", p,
                                    count == 0 ? 0 : count - 1)),
      m_place(p) {}

remote_exception::remote_exception(place_id where, const std::string& text)
    : std::runtime_error(fmt::format("at place {}: {}", where, text)), m_place(where),
      m_text(text) {}

place_id here() { return detail::active_messages::current().here(); }
place_id places() { return detail::active_messages::current().places(); }

namespace detail {

namespace {
std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}
} // namespace

std::string describe_current_exception() {
  try {
    throw;
  } catch (const multiple_exceptions& e) {
    std::string s = "apgas::multiple_exceptions:";
    for (const auto& inner : e.flattened()) {
      try {
        std::rethrow_exception(inner);
      } catch (...) {
        s += " [" + describe_current_exception() + "]";
      }
    }
    return s;
  } catch (const std::exception& e) {
    return demangle(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

} // namespace detail
} // namespace apgas
