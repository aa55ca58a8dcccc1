/// @file How the state dump and errors name a finish.
#pragma once

#include "apgas/detail/finish_tally.hpp"

#include <string>

namespace apgas::detail {

/// @brief A finish as the state dump and errors name it: "home:serial", and " (SPMD)" after an
/// SPMD finish's serial (the bit that marks it left out).
inline std::string describe(const finish_id& id) {
  std::string s = std::to_string(id.home) + ":" + std::to_string(id.serial & ~k_spmd_serial_bit);
  if (is_spmd(id)) s += " (SPMD)";
  return s;
}

} // namespace apgas::detail
