// The registry of remote entry points (see code_registry.hpp).
#include "apgas/detail/code_registry.hpp"

#include "apgas/detail/message_format.hpp"

#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace apgas::detail {

namespace {
/// Offset -> kind. Filled by static initialisers before main and only read afterwards, so the
/// reads need no lock.
std::unordered_map<std::int64_t, code_kind>& registry() {
  static std::unordered_map<std::int64_t, code_kind> entries;
  return entries;
}
} // namespace

bool register_code(const void* fn, code_kind kind) noexcept {
  try {
    registry().emplace(code_offset(fn), kind);
  } catch (...) { // out of memory before main: nothing could run anyway
    std::fputs("apgas: cannot register a remote entry point\n", stderr);
    std::abort();
  }
  return true;
}

bool registered_code(std::int64_t offset, code_kind kind) noexcept {
  const auto& entries = registry();
  const auto it = entries.find(offset);
  return it != entries.end() && it->second == kind;
}

} // namespace apgas::detail
