/// @file References that cross places: global_ref<T> (one object at its home place) and
/// place_local<T> (one object per place, found at each place by a shared id).
///
///     long count = 0;
///     apgas::global_ref<long> ref(count);                    // count lives here
///     co_await apgas::at(ref.home(), [](apgas::global_ref<long> r) { ++*r; }, ref);
///
///     auto hits = co_await apgas::place_local<long>::make([](apgas::place_id) { return 0L; });
///     co_await apgas::for_each_place([](apgas::place_local<long> h) { ++h.get(); }, hits);
#pragma once

#include "apgas/detail/place_local_registry.hpp"
#include "apgas/finish.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>

namespace apgas {

/// @brief A reference to an object at its home place. It can be sent anywhere; it can be
/// dereferenced only at home (send an activity there with async_at/at to use it).
/// The object must outlive every use of the reference (the reference does not own it).
template <class T>
class global_ref {
public:
  global_ref() = default;
  /// @brief A reference to `object`, which lives here.
  explicit global_ref(T& object)
      : m_home(apgas::here()), m_address(reinterpret_cast<std::uintptr_t>(&object)) {}
  /// @brief The place where the object lives.
  place_id home() const noexcept { return m_home; }
  /// @brief The object. @throws bad_place (naming home() and here) unless called at home();
  /// std::invalid_argument for a null reference (made by the default constructor).
  T& operator*() const {
    // here() inline (the runtime's module): this runs once per remote update.
    if (m_address == 0 || detail::active_messages::current().here() != m_home) [[unlikely]]
      detail::throw_global_ref_misuse(m_home, m_address == 0);
    return *reinterpret_cast<T*>(m_address);
  }
  T* operator->() const { return &**this; }
  friend bool operator==(const global_ref&, const global_ref&) = default;

private:
  // No serialize(): a reference travels as its 16 bytes (trivially copyable, no padding), so
  // a plain async that carries one has bitwise arguments, and a stream of them to one place
  // travels merged (transport::send_merged).
  place_id m_home = 0;
  std::uint32_t m_zero = 0;     ///< fills what would be padding (its bytes travel too)
  std::uintptr_t m_address = 0; ///< meaningful only at m_home
};

/// @brief One T per place, found by a shared id: send the handle anywhere and get() the
/// object of the place you are at (X10's PlaceLocalHandle).
template <class T>
class place_local {
public:
  place_local() = default;

  /// @brief Creates a T at every place, with `init(here())`; `init` captures nothing.
  template <class Init>
  static task<place_local> make(Init) {
    detail::require_function_object<Init>();
    place_local handle;
    handle.m_id = detail::place_local_registry::instance().next_id(apgas::here());
    co_await finish([&]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await async_at(
            p,
            [](std::uint64_t id) {
              detail::place_local_registry::instance().put(
                  id, std::make_shared<T>(Init{}(apgas::here())));
            },
            handle.m_id);
      }
    });
    co_return handle;
  }
  /// @brief Destroys the object at every place.
  task<> destroy() const {
    const std::uint64_t id = m_id;
    co_await finish([id]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await async_at(
            p, [](std::uint64_t i) { detail::place_local_registry::instance().erase(i); }, id);
      }
    });
  }
  /// @brief This place's object. @throws std::logic_error if it does not exist here.
  T& get() const {
    void* p = detail::place_local_registry::instance().get(m_id);
    if (p == nullptr) throw std::logic_error("apgas: place_local object missing at this place");
    return *static_cast<T*>(p);
  }
  std::uint64_t id() const noexcept { return m_id; }

private:
  std::uint64_t m_id = 0; ///< the handle travels as this (bitwise, see global_ref)
};

static_assert(detail::is_bitwise_v<global_ref<int>> &&
                  std::has_unique_object_representations_v<global_ref<int>>,
              "a global_ref travels as its bytes, all of them set");
static_assert(detail::is_bitwise_v<place_local<int>> &&
                  std::has_unique_object_representations_v<place_local<int>>,
              "a place_local handle travels as its bytes, all of them set");

} // namespace apgas
