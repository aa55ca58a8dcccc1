// What global_ref and place_local (<apgas/global_ref.hpp>) keep at each place: the objects of
// place_local handles, by id; and the error of a global_ref used away from its home.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace apgas::detail {

using place_id = std::uint32_t;

/// @brief Throws what dereferencing a null global_ref, or one away from `home`, throws.
[[noreturn, gnu::cold]] void throw_global_ref_misuse(place_id home, bool null);

/// @brief The objects of place_local handles at this place, by id. Thread-safety: any thread.
class place_local_registry {
public:
  static place_local_registry& instance() {
    static place_local_registry r;
    return r;
  }
  void put(std::uint64_t id, std::shared_ptr<void> object) {
    std::lock_guard guard(m_mutex);
    m_objects[id] = std::move(object);
  }
  void* get(std::uint64_t id) const {
    std::lock_guard guard(m_mutex);
    auto it = m_objects.find(id);
    return it == m_objects.end() ? nullptr : it->second.get();
  }
  void erase(std::uint64_t id) {
    std::lock_guard guard(m_mutex);
    m_objects.erase(id);
  }
  std::uint64_t next_id(place_id here) {
    std::lock_guard guard(m_mutex);
    return (static_cast<std::uint64_t>(here) << 40) | ++m_counter;
  }

private:
  mutable std::mutex m_mutex;
  std::unordered_map<std::uint64_t, std::shared_ptr<void>> m_objects;
  std::uint64_t m_counter = 0;
};
} // namespace apgas::detail
