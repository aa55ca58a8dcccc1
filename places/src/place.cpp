// The out-of-line parts of <apgas/place.hpp> (its exception, here() and places()) and of
// <apgas/global_ref.hpp>.
#include "apgas/place.hpp"

#include "apgas/global_ref.hpp"

#include <fmt/format.h>

namespace apgas {

bad_place::bad_place(place_id p, place_id count)
    : std::out_of_range(fmt::format("apgas: place {} does not exist (places are 0 to {})", p,
                                    count == 0 ? 0 : count - 1)),
      m_place(p) {}

place_id here() { return detail::active_messages::current().here(); }
place_id places() { return detail::active_messages::current().places(); }

namespace detail {

void throw_global_ref_misuse(place_id home, bool null) {
  if (null) throw std::invalid_argument("apgas: a null global_ref was dereferenced");
  const place_id here = apgas::here();
  throw bad_place(here, fmt::format("apgas: a global_ref to an object at place {} was "
                                    "dereferenced at place {}; use it at its home (at(ref.home(), "
                                    "...))",
                                    home, here));
}

} // namespace detail

} // namespace apgas
