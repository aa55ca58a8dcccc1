/// @file Checkpoints of phased programs: distributed arrays and values saved between two
/// phases, and loaded again by a new job on any number of places, into arrays of any
/// distribution.
///
///     auto ck = co_await apgas::phase_checkpoint::make(all, "heat", n, epsilon); // collective
///     std::uint64_t first = 0;
///     if (ck.resuming()) {
///       first = ck.phase();                                   // the phase it was saved after
///       co_await ck.load(apgas::saved("u", u), apgas::saved("change", change));
///     }
///     for (std::uint64_t t = first; t < phases; ++t) {
///       ... phase t ...
///       if (co_await ck.due())                                // collective: every member agrees
///         co_await ck.save(t + 1, apgas::saved("u", u), apgas::saved("change", change));
///     }
///
/// `make` reads the runtime's options: --checkpoint DIR and --checkpoint-every SECONDS turn
/// saving on, --resume DIR names the checkpoint to start from (its newest complete one). Its
/// program name and parameters (any serializable values) make the fingerprint that a resume
/// checks: a checkpoint of another program, or of other parameters, is refused
/// (checkpoint_error, one line). Every member of the team calls make, due, save and load
/// together, in the same order as the team's other collectives.
///
/// What is saved: each member writes an HDF5 file of its parts of the arrays (element types:
/// the arithmetic types), the team's rank 0 also the values (serialized); rank 0 then writes
/// `arrays.h5`, where each array is one HDF5 virtual dataset over the members' files, which
/// h5py, h5dump or ParaView open as one array; and commits the checkpoint (a manifest with
/// every file's SHA-256, then a rename: see apgas/detail/checkpoint_store.hpp). A load reads,
/// for each array, the parts of the old members that hold its new local indices, checked
/// against the manifest.
#pragma once

#include "apgas/checkpoint.hpp"
#include "apgas/detail/phase_checkpoint_files.hpp"
#include "apgas/dist_array.hpp"
#include "apgas/serialization.hpp"
#include "apgas/team.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas {

namespace detail::checkpoint {

/// @brief A named array or value of a save or a load (made by apgas::saved).
/// Trivially destructible, so that `co_await ck.save(t, apgas::saved("u", u))` holds no
/// temporary that GCC 12 would destroy twice.
template <class X>
struct saved_ref {
  std::string_view name;
  X& ref;
};

template <class T>
struct is_dist_array : std::false_type {};
template <class T>
struct is_dist_array<dist_array<T>> : std::true_type {};
template <class T>
struct is_dist_array<dist_array_2d<T>> : std::true_type {};

/// @brief The local part of a 1D array (its elements as rows of one column).
template <class T>
local_part part_of(dist_array<T>& a) {
  const std::span<T> mine = a.local();
  return {element_type_of<T>(),
          1,
          a.dist(),
          distribution::block(1, 1),
          mine.empty() ? nullptr : mine.data(),
          mine.size(),
          1,
          1};
}
/// @brief The local part of a 2D array (its rows stride() cells apart: the ghosts between).
template <class T>
local_part part_of(dist_array_2d<T>& a) {
  const bool empty = a.local_rows() == 0 || a.local_cols() == 0;
  return {element_type_of<T>(),
          2,
          a.dist().rows,
          a.dist().cols,
          empty ? nullptr : &a(0, 0),
          a.local_rows(),
          a.local_cols(),
          a.stride()};
}

} // namespace detail::checkpoint

/// @brief Names an array (dist_array or dist_array_2d of an arithmetic type) or a value (any
/// serializable type) for phase_checkpoint::save and load. The reference must stay valid
/// until the save or load completes.
template <class X>
detail::checkpoint::saved_ref<X> saved(std::string_view name, X& x) {
  if constexpr (!detail::checkpoint::is_dist_array<X>::value)
    static_assert(serializable<X>, "apgas::saved: a value saved in a checkpoint must be "
                                   "serializable (see apgas/serialization.hpp)");
  return {name, x};
}

/// @brief Where a phased program's checkpoints go and where a resume comes from.
struct checkpoint_settings {
  std::string dir;         ///< saves go into this directory; empty: no saves
  double every = 60;       ///< seconds between two saves (see phase_checkpoint::due)
  std::string resume_from; ///< start from the newest complete checkpoint here; empty: fresh
  /// @brief The runtime's options --checkpoint, --checkpoint-every and --resume.
  static checkpoint_settings from_options();
};

/// @brief The checkpoints of a phased program over a team (see the top of this file).
/// Move-only; every member holds one. Thread-safety: one activity per member at a time.
class phase_checkpoint {
public:
  /// @brief Collective over `members`: the checkpoints of `program`, run with `parameters`
  /// (serializable), where the runtime's options say. @throws checkpoint_error (at every member)
  /// if --resume names a checkpoint that is missing, damaged, of a GLB run, of another
  /// program or of other parameters; or if --checkpoint names a directory that cannot be
  /// made.
  template <class... Params>
  static task<phase_checkpoint> make(team members, std::string program,
                                     const Params&... parameters) {
    return make(std::move(members), checkpoint_settings::from_options(), std::move(program),
                parameters...);
  }
  /// @brief The same, with the directories and interval given instead of the options'.
  template <class... Params>
  static task<phase_checkpoint> make(team members, checkpoint_settings settings,
                                     std::string program, const Params&... parameters) {
    static_assert((serializable<Params> && ...),
                  "apgas::phase_checkpoint::make: the parameters must be serializable (they "
                  "make the fingerprint a resume checks)");
    std::vector<std::byte> args;
    byte_writer w(args);
    detail::serialize_identity_all(w, parameters...);
    phase_checkpoint c(std::move(members), detail::checkpoint::phase_plan::make(
                                               std::move(settings), std::move(program), args));
    co_await c.start();
    co_return c;
  }

  phase_checkpoint(phase_checkpoint&&) noexcept = default;
  phase_checkpoint& operator=(phase_checkpoint&&) noexcept = default;

  /// @brief True when this job saves checkpoints (--checkpoint).
  bool saving() const noexcept { return !m_plan.dir.empty(); }
  /// @brief True when this job starts from a checkpoint (--resume).
  bool resuming() const noexcept { return m_resume.has_value(); }
  /// @brief The phase the resumed checkpoint was saved with (0 when not resuming).
  std::uint64_t phase() const noexcept { return m_resume ? m_resume->phase : 0; }
  /// @brief The directory of the resumed checkpoint (empty when not resuming).
  std::string resumed_path() const { return m_resume ? m_resume->where.path : std::string(); }
  /// @brief Checkpoints committed by this object.
  std::uint64_t saved_count() const noexcept { return m_saved; }
  /// @brief Seconds this member spent in save() (all of them), and in load().
  double save_seconds() const noexcept { return m_save_seconds; }
  double load_seconds() const noexcept { return m_load_seconds; }

  /// @brief True when saving and --checkpoint-every seconds have passed since this member's
  /// start or last save, by its own clock: for a program that decides at one place, or that
  /// reduces the answers itself (a clock's advance can carry them). Not collective.
  bool interval_passed() const noexcept {
    return saving() && std::chrono::duration<double>(clock::now() - m_last).count() >= m_plan.every;
  }

  /// @brief Collective: true when --checkpoint-every seconds have passed since the start or
  /// the last save, by rank 0's clock, the same answer at every member. Always false, with no
  /// messages, when not saving.
  APGAS_AWAIT_IT task<bool> due() {
    if (!saving()) co_return false;
    std::uint8_t yes = 0;
    if (m_members.rank() == 0) yes = interval_passed() ? 1 : 0;
    co_await m_members.broadcast(yes, 0);
    co_return yes != 0;
  }

  /// @brief Collective: saves `fields` (made by apgas::saved) as the state after `phase`. The
  /// arrays must be over this object's team. @return true once the checkpoint is complete;
  /// false if it could not be written (rank 0 prints a one-line warning; nothing is lost
  /// but this checkpoint, and the older one stays). Does nothing and returns false when not
  /// saving.
  template <class... X>
  APGAS_AWAIT_IT task<bool> save(std::uint64_t phase, detail::checkpoint::saved_ref<X>... fields) {
    if (!saving()) co_return false;
    const clock::time_point start = clock::now();
    detail::checkpoint::part_writer part(m_plan, phase, m_members.rank(), m_members.size());
    std::string failure;
    try {
      (add(part, fields), ...);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    const bool ok = co_await write_and_commit(part, failure);
    m_last = clock::now();
    m_save_seconds += std::chrono::duration<double>(m_last - start).count();
    co_return ok;
  }

  /// @brief Collective: loads `fields` (made by apgas::saved) from the checkpoint resumed
  /// from, into arrays of any distribution over this object's team. pre: resuming().
  /// @throws checkpoint_error if the checkpoint lacks one of them, holds it with another
  /// element type or size, or has a part that is missing or damaged.
  template <class... X>
  APGAS_AWAIT_IT task<> load(detail::checkpoint::saved_ref<X>... fields) {
    if (!m_resume) throw std::logic_error("apgas::phase_checkpoint::load: not resuming");
    const clock::time_point start = clock::now();
    std::string failure;
    {
      detail::checkpoint::part_cache parts(*m_resume);
      try {
        (take(parts, fields), ...);
        // Every part is checked once, by some member, even one that no load reads.
        if (!std::exchange(m_verified, true))
          parts.verify_share(m_members.rank(), m_members.size());
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
    co_await agree(failure); // a part only some members read fails the load at every member
    m_load_seconds += std::chrono::duration<double>(clock::now() - start).count();
  }

private:
  using clock = std::chrono::steady_clock;

  phase_checkpoint(team members, detail::checkpoint::phase_plan plan)
      : m_members(std::move(members)), m_plan(std::move(plan)), m_last(clock::now()) {}

  /// Rank 0 finds the checkpoint to resume from and tells the others (or why it is refused).
  task<> start();
  /// Collective: throws checkpoint_error at every member if `failure` is not empty at one
  /// (the message of the lowest such rank).
  task<> agree(const std::string& failure);
  /// Every member writes its part; rank 0 commits once all are written, or warns.
  task<bool> write_and_commit(detail::checkpoint::part_writer& part, const std::string& failed);

  template <class X>
  void add(detail::checkpoint::part_writer& part, detail::checkpoint::saved_ref<X>& f) {
    if constexpr (detail::checkpoint::is_dist_array<X>::value) {
      if (f.ref.members().places() != m_members.places())
        throw std::invalid_argument("apgas::phase_checkpoint::save: array '" + std::string(f.name) +
                                    "' is over another team");
      part.add_array(std::string(f.name), detail::checkpoint::part_of(f.ref));
    } else if (m_members.rank() == 0) {
      part.add_value(std::string(f.name), to_bytes(f.ref));
    }
  }
  template <class X>
  void take(detail::checkpoint::part_cache& parts, detail::checkpoint::saved_ref<X>& f) {
    if constexpr (detail::checkpoint::is_dist_array<X>::value) {
      parts.load_array(std::string(f.name), detail::checkpoint::part_of(f.ref), m_members.rank());
    } else {
      const std::vector<std::byte>& bytes = m_resume->value(std::string(f.name));
      try {
        f.ref = from_bytes<X>(bytes);
      } catch (const serialization_error&) {
        throw checkpoint_error("checkpoint " + m_resume->where.path + " holds value '" +
                               std::string(f.name) + "' of another type");
      }
    }
  }

  team m_members;
  detail::checkpoint::phase_plan m_plan;
  std::optional<detail::checkpoint::resumed> m_resume;
  clock::time_point m_last;
  std::uint64_t m_saved = 0;
  bool m_verified = false; ///< every part of the resumed checkpoint checked
  double m_save_seconds = 0;
  double m_load_seconds = 0;
};

} // namespace apgas
