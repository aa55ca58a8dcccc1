/// @file A flag's comma-separated values ("--workers 1,2"), for the benchmarks' own flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace apgas_bench {

/// @brief The items of "a,b,c", empty ones skipped.
inline std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    if (comma != 0) out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

} // namespace apgas_bench
