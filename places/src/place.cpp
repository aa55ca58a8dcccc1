// The out-of-line parts of <apgas/place.hpp>: its exception, here() and places().
#include "apgas/place.hpp"

#include <fmt/format.h>

namespace apgas {

bad_place::bad_place(place_id p, place_id count)
    : std::out_of_range(fmt::format("apgas: place {} does not exist (places are 0 to {})", p,
                                    count == 0 ? 0 : count - 1)),
      m_place(p) {}

place_id here() { return detail::active_messages::current().here(); }
place_id places() { return detail::active_messages::current().places(); }

} // namespace apgas
