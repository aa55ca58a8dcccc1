// A phased program's checkpoints (see apgas/phase_checkpoint.hpp): the plan from the options,
// the start of a resume, and the collective write and commit of a save.
#include "apgas/phase_checkpoint.hpp"

#include "apgas/local_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace apgas {

namespace store = detail::checkpoint;

namespace {

/// Rank 0's answer to a resume: why it is refused, or the checkpoint.
struct start_answer {
  std::string refusal;
  store::resumed checkpoint;
  template <class A>
  void serialize(A& a) {
    a& refusal& checkpoint;
  }
};

/// `bytes` at every member becomes `root`'s (two broadcasts: the size, then the bytes).
task<> broadcast_bytes(const team& t, std::vector<std::byte>& bytes, place_id root) {
  std::uint64_t n = bytes.size();
  co_await t.broadcast(n, root);
  bytes.resize(n);
  if (n != 0) co_await t.broadcast(std::span<std::byte>(bytes), root);
}

/// A member's part as rank 0 gathers it: fixed size, so that a gather carries it.
struct written_part {
  std::uint64_t bytes = 0;
  std::array<char, 64> sha256{};
  std::array<char, 192> failure{}; ///< empty: written; else why not (cut short)
};

void set_text(std::array<char, 192>& to, const std::string& text) {
  const std::size_t n = std::min(text.size(), to.size() - 1);
  std::memcpy(to.data(), text.data(), n);
  to[n] = '\0';
}

} // namespace

checkpoint_settings checkpoint_settings::from_options() {
  checkpoint_settings s;
  if (const local_runtime* rt = local_runtime::current()) {
    s.dir = rt->opts().checkpoint;
    s.every = rt->opts().checkpoint_every;
    s.resume_from = rt->opts().resume;
  }
  return s;
}

namespace detail::checkpoint {

phase_plan phase_plan::make(checkpoint_settings settings, std::string program,
                            std::span<const std::byte> parameters) {
  phase_plan plan;
  plan.dir = std::move(settings.dir);
  plan.every = settings.every;
  plan.resume_from = std::move(settings.resume_from);
  std::vector<std::byte> what(program.size());
  std::memcpy(what.data(), program.data(), program.size());
  what.push_back(std::byte{0});
  what.insert(what.end(), parameters.begin(), parameters.end());
  plan.fingerprint = sha256_hex(what);
  plan.describes = std::move(program);
  if (!plan.dir.empty()) prepare(plan.dir);
  return plan;
}

const std::vector<std::byte>& resumed::value(const std::string& name) const {
  const auto it = values.find(name);
  if (it == values.end())
    throw checkpoint_error(fmt::format("checkpoint {} holds no value '{}'", where.path, name));
  return it->second;
}

} // namespace detail::checkpoint

task<> phase_checkpoint::start() {
  if (m_plan.resume_from.empty()) co_return; // --resume is the same at every member
  std::vector<std::byte> bytes;
  if (m_members.rank() == 0) {
    start_answer answer;
    try {
      answer.checkpoint = store::resumed::find(m_plan);
    } catch (const checkpoint_error& e) {
      answer.refusal = e.what();
    } catch (const std::exception& e) {
      answer.refusal = fmt::format("--resume {}: {}", m_plan.resume_from, e.what());
    }
    bytes = to_bytes(answer);
  }
  co_await broadcast_bytes(m_members, bytes, 0);
  start_answer answer = from_bytes<start_answer>(bytes);
  if (!answer.refusal.empty()) throw checkpoint_error(answer.refusal);
  m_resume = std::move(answer.checkpoint);
}

task<> phase_checkpoint::agree(const std::string& failure) {
  const place_id none = m_members.size();
  const place_id mine = failure.empty() ? none : m_members.rank();
  const place_id first = co_await m_members.allreduce(mine, apgas::min);
  if (first == none) co_return;
  std::vector<std::byte> bytes;
  if (m_members.rank() == first) bytes = to_bytes(failure);
  co_await broadcast_bytes(m_members, bytes, first);
  throw checkpoint_error(from_bytes<std::string>(bytes));
}

task<bool> phase_checkpoint::write_and_commit(store::part_writer& part, const std::string& failed) {
  std::string failure = failed;
  const bool root = m_members.rank() == 0;
  std::uint64_t seq = 0;
  if (root) {
    try {
      seq = store::next_sequence(m_plan.dir);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  co_await m_members.broadcast(seq, 0);
  written_part mine;
  if (seq == 0 && failure.empty()) failure = "rank 0 could not number it";
  if (failure.empty()) {
    try {
      const std::vector<std::byte> image = part.image();
      const store::part_record r = store::write_part(m_plan.dir, seq, m_members.rank(), image);
      mine.bytes = r.bytes;
      std::memcpy(mine.sha256.data(), r.sha256.data(),
                  std::min(r.sha256.size(), mine.sha256.size()));
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) set_text(mine.failure, fmt::format("place {}: {}", here(), failure));
  const std::vector<written_part> all = co_await m_members.gather(mine, 0);
  std::uint8_t committed = 0;
  if (root) {
    std::string why;
    store::manifest m;
    m.kind = "phases";
    m.fingerprint = m_plan.fingerprint;
    m.describes = m_plan.describes;
    m.ordinal = 0; // not a GLB run: a GLB run's --resume passes it by
    m.sequence = seq;
    m.places = m_members.size();
    for (const written_part& w : all) {
      if (w.failure[0] != '\0' && why.empty()) why = w.failure.data();
      m.parts.push_back({w.bytes, std::string(w.sha256.data(), w.sha256.size())});
    }
    if (why.empty()) {
      try {
        const std::uint64_t phase = part.phase();
        store::write_extra(
            m_plan.dir, seq, store::k_view_file,
            store::view_image(part.arrays(), m_members.size(), phase, m_plan.describes));
        store::commit(m_plan.dir, m);
        committed = 1;
      } catch (const std::exception& e) {
        why = e.what();
      }
    }
    if (!committed) {
      std::fprintf(stderr,
                   "apgas: warning: the checkpoint of phase %llu into %s failed, the program "
                   "goes on: %s\n",
                   static_cast<unsigned long long>(part.phase()), m_plan.dir.c_str(), why.c_str());
      std::fflush(stderr);
    }
  }
  co_await m_members.broadcast(committed, 0);
  if (committed != 0) ++m_saved;
  co_return committed != 0;
}

} // namespace apgas
