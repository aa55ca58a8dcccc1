// A clock phase on the collective path: votes and lanes (see clock_collective.hpp).
#include "clock_collective.hpp"

#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/message_format.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace apgas::detail {

namespace {
/// registered_code for a combine function, remembering the last one that passed: a clock's
/// phases use the same one again and again (a map look-up each time would cost more than the
/// rest of the combination).
bool registered_combine(std::int64_t code) noexcept {
  thread_local std::int64_t last_good = 0;
  if (code != 0 && code == last_good) return true;
  if (!registered_code(code, code_kind::combine)) return false;
  last_good = code;
  return true;
}
} // namespace

const phase_vote phase_vote::k_empty{};

std::size_t phase_vote::used_bytes(const void* vote) noexcept {
  phase_vote head;
  std::memcpy(static_cast<void*>(&head), vote, offsetof(phase_vote, value));
  if (head.stable == 0) return offsetof(phase_vote, code);
  if (head.has_value == 0) return 0;
  return offsetof(phase_vote, value) + std::min<std::size_t>(head.size, k_max_reduce_bytes);
}

void phase_vote::set(bool is_stable, const clock_partial& partial) noexcept {
  stable = is_stable && !partial.failed() ? 1 : 0;
  has_value = 0;
  size = 0;
  code = 0;
  if (stable != 0 && !partial.empty()) {
    code = code_offset(reinterpret_cast<const void*>(partial.combine));
    size = partial.size;
    has_value = 1;
    std::memcpy(value.data(), partial.value.data(), partial.size);
  }
}

void phase_vote::result_into(clock_partial& p) const noexcept {
  p.clear();
  if (has_value == 0) return;
  if (size > k_max_reduce_bytes || !registered_combine(code)) {
    p.fail(true, nullptr); // cannot come from a place of this build: say so, never jump
    return;
  }
  p.combine = reinterpret_cast<combine_fn>(const_cast<void*>(code_at(code)));
  p.size = size;
  std::memcpy(p.value.data(), value.data(), size);
}

void combine_votes(std::byte* acc_bytes, const std::byte* in_bytes) {
  // Field by field, in place: only the bytes that were sent mean something (used_bytes; an
  // empty vote is k_empty, which the default vote is).
  const auto byte_at = [](const std::byte* v, std::size_t offset) {
    return static_cast<std::uint8_t>(v[offset]);
  };
  constexpr std::size_t k_stable = offsetof(phase_vote, stable);
  constexpr std::size_t k_has_value = offsetof(phase_vote, has_value);
  if (byte_at(in_bytes, k_stable) == 0) { // an unstable vote makes the result unstable
    acc_bytes[k_stable] = std::byte{0};
    return;
  }
  if (byte_at(acc_bytes, k_stable) == 0 || byte_at(in_bytes, k_has_value) == 0) return;
  std::uint32_t in_size = 0;
  std::int64_t in_code = 0;
  std::memcpy(&in_size, in_bytes + offsetof(phase_vote, size), sizeof in_size);
  std::memcpy(&in_code, in_bytes + offsetof(phase_vote, code), sizeof in_code);
  if (in_size > k_max_reduce_bytes) { // a damaged vote: the general protocol reports it
    acc_bytes[k_stable] = std::byte{0};
    return;
  }
  if (byte_at(acc_bytes, k_has_value) == 0) { // the first value: acc takes it
    std::memcpy(acc_bytes + offsetof(phase_vote, has_value),
                in_bytes + offsetof(phase_vote, has_value),
                offsetof(phase_vote, value) - offsetof(phase_vote, has_value) + in_size);
    return;
  }
  std::uint32_t acc_size = 0;
  std::int64_t acc_code = 0;
  std::memcpy(&acc_size, acc_bytes + offsetof(phase_vote, size), sizeof acc_size);
  std::memcpy(&acc_code, acc_bytes + offsetof(phase_vote, code), sizeof acc_code);
  if (acc_code != in_code || acc_size != in_size || !registered_combine(acc_code)) {
    // Contributions that disagree, or a damaged vote: the general protocol reports it.
    acc_bytes[k_stable] = std::byte{0};
    return;
  }
  try {
    const auto op = reinterpret_cast<combine_fn>(const_cast<void*>(code_at(acc_code)));
    op(acc_bytes + offsetof(phase_vote, value), in_bytes + offsetof(phase_vote, value));
  } catch (...) { // the general protocol gives the exception to every contributor
    acc_bytes[k_stable] = std::byte{0};
  }
}

std::uint32_t clock_lanes::lane_of(const clock_id& id, std::uint32_t lanes) noexcept {
  std::uint64_t h = id.serial * 0x9E3779B97F4A7C15ULL ^ (std::uint64_t{id.home} << 32 | id.home);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<std::uint32_t>(h % lanes);
}

bool clock_lanes::hold(std::uint32_t lane, const clock_id& id) {
  std::lock_guard guard(m_mutex);
  const auto [it, added] = m_held.emplace(lane, id);
  return added || it->second == id;
}

void clock_lanes::free(std::uint32_t lane, const clock_id& id) noexcept {
  std::lock_guard guard(m_mutex);
  const auto it = m_held.find(lane);
  if (it != m_held.end() && it->second == id) m_held.erase(it);
}

} // namespace apgas::detail
