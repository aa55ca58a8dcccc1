// The transport of a one-place run (started without mpirun): no MPI at all.
#pragma once

#include "apgas/detail/transport.hpp"

#include <memory>

namespace apgas::detail {

/// @brief A transport with one place whose messages go to itself.
std::unique_ptr<transport> make_single_place_transport(const options& opts = {});

} // namespace apgas::detail
