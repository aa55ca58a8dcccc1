// Checkpoints of a GLB run (--checkpoint DIR, --checkpoint-every S) and its resume
// (--resume DIR), on any number of places. Nothing here is the program's: a checkpoint holds
// the bags (their own serialization, the one that moves loot) and the results so far.
//
// A checkpoint is a consistent cut of the run, taken by a coordinator activity at the place
// that called glb::run (checkpointer below), in four steps, each an at_each_place:
//  1. freeze: the alarm freezes the coordinator's place (so that a worker is free for the
//     coordinator), and the coordinator every other place, with a GLB message down the start
//     tree (handled at the next poll, even while every worker is busy). A frozen place
//     refuses random steal requests (and those waiting), and its working activities park at
//     their next batch boundary, each with its bag. A place answers the coordinator's
//     at_each_place once it is parked: every working activity parked, its thief's turn over (a
//     thief waits for its answer, and frozen victims refuse), and its start activity begun.
//     It reports the lifeline loot it has sent and the lifeline loot that arrived.
//  2. If the sums differ, lifeline loot is still in flight: ask again (step 1 without the
//     freeze) until they are equal. No place sends loot once it is parked (only working
//     activities send, between batches, and they park first; an activity started by loot
//     that arrives later parks before its first batch), so the sent sum is final after the
//     first round and the rounds end.
//  3. snapshot: each place serializes its parked bags and its workers' results, reduced.
//  4. thaw, then write: the activities go on, and each place writes its snapshot as its part.
//     Then the coordinator writes the manifest and commits (checkpoint_store.hpp).
// Why no item is lost or counted twice: every item not processed yet is, at any moment, in
// the bag of a working activity, in random loot in flight (its thief waits: its place is not
// parked), or in lifeline loot in flight (counted by the sums). When every place is parked
// and the sums agree, neither kind of loot is in flight, so every unprocessed item is in a
// parked bag, and every processed item is in the result of the worker that processed it.
// Nothing changes a bag or a result between the cut and the snapshot (all activities that
// could are parked), and thawing only after every place's snapshot keeps a loot sent after a
// thaw out of every snapshot. A place where an activity failed reports it, and the checkpoint
// is abandoned (the run fails anyway).
//
// A resume reads the newest complete checkpoint (at the coordinator, before the run is set
// up): it must be of this run (its fingerprint: the bag's and Make's types and the run's
// arguments; and the same run of the job: its ordinal). Place h of the new job takes the parts
// h, h + P, h + 2P, ... of the old one: their bags are its initial bags (Make is not called)
// and their results the start of its result. GLB spreads the bags from there.
#pragma once

#include "apgas/collectives.hpp"
#include "apgas/detail/checkpoint_store.hpp"
#include "apgas/detail/glb_alarm.hpp"
#include "apgas/detail/glb_place.hpp"
#include "apgas/finish.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

namespace apgas::glb::detail {

using apgas::detail::glb::place_base;
using apgas::detail::glb::typed_place;
namespace store = apgas::detail::checkpoint;

/// @brief What a run does about checkpoints: from the options and what the run is.
struct checkpoint_plan {
  std::string dir;           ///< where checkpoints go; empty: none
  double every = 0;          ///< seconds between two
  std::string fingerprint;   ///< what the run computes: a digest of its types and arguments
  std::string describes;     ///< its types, for people
  std::uint64_t ordinal = 0; ///< the run's number among the job's GLB runs
  std::optional<store::found> resume; ///< the checkpoint this run starts from
};

/// @brief The plan of a run with parameters `p`: `ordinal` is its number in the job,
/// `describes` names its types, `args` are its arguments serialized. @throws checkpoint_error
/// if p.resume_from has no complete checkpoint, or a damaged one, or one of another
/// computation (for --resume: if it is of this run's number).
checkpoint_plan plan_checkpoints(const parameters& p, std::uint64_t ordinal, std::string describes,
                                 std::span<const std::byte> args);
/// @brief A type's name as people write it.
std::string type_name(const std::type_info& type);
/// @brief `failure`, or, if it holds a checkpoint_error (thrown at any place), that error
/// alone: one line for the user, and the exit code of a usage error.
std::exception_ptr plain_checkpoint_error(std::exception_ptr failure);
/// @brief Prints the one-line warning of a checkpoint that failed (the run goes on).
void warn_checkpoint_failed(const std::string& dir, const char* what) noexcept;
/// @brief Prints the line of a checkpoint complete, at --progress-ms (on stderr).
void note_checkpoint(const std::string& dir, std::uint64_t seq, std::uint64_t bytes) noexcept;

/// @brief "checkpoint <path>: <its part `place`> <why>": a refusal of a part.
std::string part_error(const store::found& c, std::uint32_t place, const char* why);

/// @brief What a checkpoint's part starts with: checked on resume against the manifest.
struct part_header {
  std::string fingerprint;
  std::uint64_t sequence = 0;
  std::uint32_t place = 0;
  template <class A>
  void serialize(A& a) {
    a& fingerprint& sequence& place;
  }
};

/// @brief Steps 1 and 2: waits until this place is frozen and parked; reports its counts.
template <class Bag>
struct parked_fn {
  task<place_base::freeze_state> operator()(std::uint64_t run) const {
    place_base& p = typed_place<Bag>::of(run);
    co_await p.until_parked();
    co_return p.frozen_state();
  }
};

/// @brief Step 3: the part written since the last checkpoint (its record and write time).
template <class Bag>
struct collect_fn {
  task<std::pair<store::part_record, double>> operator()(std::uint64_t run) const {
    co_return typed_place<Bag>::of(run).finish_writing_part();
  }
};

/// @brief Step 4: serializes this place's part and starts writing it (on a thread of its
/// own); returns its size.
template <class Bag>
struct snapshot_fn {
  task<std::uint64_t> operator()(std::uint64_t run, part_header head, std::string dir) const {
    typed_place<Bag>& p = typed_place<Bag>::of(run);
    std::vector<std::byte> bytes;
    byte_writer w(bytes);
    head.place = here();
    serialize(w, head);
    p.write_snapshot(w);
    const auto size = static_cast<std::uint64_t>(bytes.size());
    p.start_writing_part(std::move(dir), head.sequence, std::move(bytes));
    co_return size;
  }
};

/// @brief Step 5: thaws this place, unless it is `coordinator`'s (which thaws itself last,
/// see checkpointer).
template <class Bag>
struct thaw_fn {
  task<bool> operator()(std::uint64_t run, place_id coordinator) const {
    if (here() != coordinator) typed_place<Bag>::of(run).thaw();
    co_return true;
  }
};

/// @brief What the run's checkpoints cost (for its statistics).
struct checkpoint_tally {
  std::uint64_t taken = 0;  ///< committed
  double pause_seconds = 0; ///< places frozen, all checkpoints together
  double write_seconds = 0; ///< the parts written (the slowest place's) and committed
  std::uint64_t bytes = 0;  ///< the newest committed checkpoint's parts
};

/// @brief The coordinator's state between checkpoints: the checkpoint whose parts are being
/// written, and the commit of the one before, on a thread of its own.
struct checkpoint_pipeline {
  std::optional<std::uint64_t> writing; ///< parts written since its snapshot; not committed
  std::uint64_t next = 0;               ///< the number of the next snapshot
  std::thread committer;                ///< commits `writing`'s predecessor
  std::exception_ptr commit_failure;
  double commit_seconds = 0;
  ~checkpoint_pipeline() {
    if (committer.joinable()) committer.join();
  }
};

/// @brief Waits for the parts of the checkpoint being written and starts its commit (on a
/// thread of its own, after the previous commit). pre: every place is parked (its workers
/// are free to join the writers). @throws checkpoint_error if a part could not be written.
template <class Bag>
task<> commit_written(std::uint64_t run, const checkpoint_plan& plan, checkpoint_pipeline& line,
                      checkpoint_tally& tally) {
  if (!line.writing) co_return;
  std::vector<std::pair<store::part_record, double>> written =
      co_await at_each_place(collect_fn<Bag>{}, run);
  if (line.committer.joinable()) line.committer.join();
  if (line.commit_failure) std::rethrow_exception(std::exchange(line.commit_failure, nullptr));
  tally.write_seconds += line.commit_seconds;
  store::manifest m;
  m.kind = "glb";
  m.fingerprint = plan.fingerprint;
  m.describes = plan.describes;
  m.ordinal = plan.ordinal;
  m.sequence = *std::exchange(line.writing, std::nullopt);
  m.places = places();
  double slowest = 0;
  for (auto& [record, seconds] : written) {
    m.parts.push_back(std::move(record));
    slowest = std::max(slowest, seconds);
  }
  ++tally.taken;
  tally.write_seconds += slowest;
  tally.bytes = 0;
  for (const store::part_record& r : m.parts) tally.bytes += r.bytes;
  note_checkpoint(plan.dir, m.sequence, tally.bytes);
  line.committer = std::thread([&line, dir = plan.dir, m = std::move(m)] {
    try {
      const auto start = std::chrono::steady_clock::now();
      store::commit(dir, m);
      line.commit_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } catch (...) {
      line.commit_failure = std::current_exception();
    }
  });
}

/// @brief One checkpoint, the steps at the top of this file: freeze, wait until parked and no
/// loot is in flight, commit the previous checkpoint, take this one's snapshots, thaw every
/// place but this one. pre: this place is frozen (by the alarm). @return false if abandoned
/// (a place failed). @throws checkpoint_error if a part could not be written (every place
/// but this one thawed).
template <class Bag>
task<bool> take_checkpoint(std::uint64_t run, const checkpoint_plan& plan,
                           checkpoint_pipeline& line, checkpoint_tally& tally) {
  bool consistent = false;
  std::exception_ptr failure;
  try {
    typed_place<Bag>::of(run).freeze_everywhere();
    std::vector<place_base::freeze_state> states = co_await at_each_place(parked_fn<Bag>{}, run);
    for (;;) {
      std::uint64_t sent = 0;
      std::uint64_t arrived = 0;
      bool failed = false;
      for (const place_base::freeze_state& s : states) {
        sent += s.lifeline_sent;
        arrived += s.lifeline_arrived;
        failed = failed || s.failed;
      }
      if (failed) break;
      if (sent == arrived) {
        consistent = true;
        break;
      }
      states = co_await at_each_place(parked_fn<Bag>{}, run);
    }
    if (consistent) {
      co_await commit_written<Bag>(run, plan, line, tally);
      // Named, not temporaries inside co_await (GCC 12 destroys some of those twice).
      part_header head;
      head.fingerprint = plan.fingerprint;
      head.sequence = line.next;
      std::string dir = plan.dir;
      std::vector<std::uint64_t> sizes = co_await at_each_place(snapshot_fn<Bag>{}, run, head, dir);
      line.writing = line.next++;
    }
  } catch (...) {
    failure = std::current_exception();
    consistent = false;
  }
  // Every place thaws, also after a failure: none may stay frozen.
  const place_id me = here();
  std::vector<bool> thawed = co_await at_each_place(thaw_fn<Bag>{}, run, me);
  if (failure) std::rethrow_exception(failure);
  co_return consistent;
}

/// @brief The coordinator: a checkpoint every plan.every seconds until the work is done.
/// It must never wait for a worker of its place while the place works (the bags' activities
/// do not yield): it runs at the start, until its first sleep, and then only while its place
/// is frozen, which the alarm does before it resumes it; it thaws its place as its last step
/// before sleeping again. Writing and committing run on threads, and a checkpoint is
/// committed at the next one (or at the end of the run), when the places are parked again.
template <class Bag>
task<> checkpointer(std::uint64_t run, const checkpoint_plan& plan, const std::atomic<bool>& done,
                    checkpoint_tally& tally) {
  using clock = std::chrono::steady_clock;
  const auto every =
      std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(plan.every));
  apgas::detail::glb::alarm& alarm = apgas::detail::glb::checkpoint_alarm();
  typed_place<Bag>& here_part = typed_place<Bag>::of(run);
  checkpoint_pipeline line;
  std::string error;
  try { // at once: a directory that cannot be made is told now, not after the first interval
    store::prepare(plan.dir);
    line.next = store::next_sequence(plan.dir);
  } catch (const std::exception& e) {
    error = e.what();
  }
  for (clock::time_point due = clock::now() + every; error.empty(); due = clock::now() + every) {
    co_await alarm.sleep_until(due);
    // acquire: pairs with the release of the work's end (work_then_wake).
    if (done.load(std::memory_order_acquire)) break;
    const clock::time_point paused_at = clock::now();
    try {
      (void)co_await take_checkpoint<Bag>(run, plan, line, tally);
    } catch (const std::exception& e) {
      error = e.what();
    }
    tally.pause_seconds += std::chrono::duration<double>(clock::now() - paused_at).count();
    here_part.thaw(); // the last step before the sleep: see above
    if (!error.empty()) break;
  }
  // The work is done (every worker is free), or a checkpoint failed: the last one written
  // is committed, or given up.
  if (error.empty()) {
    try {
      co_await commit_written<Bag>(run, plan, line, tally);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (line.committer.joinable()) line.committer.join();
  if (error.empty() && line.commit_failure) {
    try {
      std::rethrow_exception(line.commit_failure);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) // the result is still worth having: the run goes on without
    warn_checkpoint_failed(plan.dir, error.c_str());
}

/// @brief The run's work (start_fn's finish), then wakes the coordinator.
template <class Bag, class Start>
task<> work_then_wake(std::uint64_t run, std::atomic<bool>& done, std::exception_ptr& failure) {
  try {
    co_await finish([&]() -> task<> { co_await async_at(0, Start{}, run); });
  } catch (...) {
    failure = std::current_exception();
  }
  done.store(true, std::memory_order_release); // see checkpointer
  apgas::detail::glb::checkpoint_alarm().wake();
}

/// @brief The run's work with a checkpoint every plan.every seconds, at the calling place.
template <class Bag, class Start>
task<> work_with_checkpoints(std::uint64_t run, const checkpoint_plan& plan,
                             checkpoint_tally& tally) {
  std::atomic<bool> done{false};
  std::exception_ptr failure;
  apgas::detail::glb::checkpoint_alarm().arm();
  co_await finish([&]() -> task<> {
    // The coordinator first: it runs until its first sleep before the work takes the worker.
    co_await async(checkpointer<Bag>(run, plan, done, tally));
    co_await async(work_then_wake<Bag, Start>(run, done, failure));
  });
  if (failure) std::rethrow_exception(failure);
}

/// @brief At resume, this place's initial bags and result: the parts h, h + P, ... of the
/// checkpoint. @throws checkpoint_error if a part is damaged or of another checkpoint.
template <class Bag>
void load_parts(const store::found& c, std::vector<Bag>& bags, typename Bag::result_type& result) {
  for (std::uint32_t j = here(); j < c.what.places; j += places()) {
    const std::vector<std::byte> bytes = store::read_part(c, j);
    try {
      byte_reader r(bytes);
      const part_header head = deserialize<part_header>(r);
      if (head.fingerprint != c.what.fingerprint || head.sequence != c.what.sequence ||
          head.place != j)
        throw checkpoint_error("is the part of another checkpoint");
      typed_place<Bag>::read_snapshot(r, bags, result);
      r.expect_end();
    } catch (const std::exception& e) {
      throw checkpoint_error(part_error(c, j, e.what()));
    }
  }
}

} // namespace apgas::glb::detail
