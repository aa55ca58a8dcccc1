// The reference model of X10's clocks, the program generator and the shrinker (see
// clock_model.hpp).
#include "clock_model.hpp"

#include <fmt/format.h>

#include <bit>
#include <functional>
#include <numeric>

namespace clock_model {

namespace {

bool registered_on(std::uint8_t mask, int c) { return ((mask >> c) & 1U) != 0; }

} // namespace

std::vector<std::uint32_t> places_of(const program& p) {
  std::vector<std::uint32_t> where(p.scripts.size(), 0);
  // Scripts are spawned by scripts before them or after: walk the spawn tree from the root.
  std::vector<int> todo{0};
  std::vector<bool> seen(p.scripts.size(), false);
  if (!p.scripts.empty()) seen[0] = true;
  while (!todo.empty()) {
    const int s = todo.back();
    todo.pop_back();
    for (const op& o : p.scripts[static_cast<std::size_t>(s)]) {
      if (o.kind != op_kind::spawn || o.child >= p.scripts.size() || seen[o.child]) continue;
      seen[o.child] = true;
      where[o.child] = o.remote != 0 ? o.place : where[static_cast<std::size_t>(s)];
      todo.push_back(static_cast<int>(o.child));
    }
  }
  return where;
}

// ---- the model ------------------------------------------------------------------------------

model::model(const program& p)
    : m_program(p), m_places(places_of(p)), m_clocks(static_cast<std::size_t>(p.clocks)) {
  std::uint32_t places = 1;
  for (std::uint32_t w : m_places) places = std::max(places, w + 1);
  for (clock_state& c : m_clocks)
    c.arrivals.assign(k_max_phase + 2, std::vector<std::int64_t>(places, 0));
  m_out.traces.resize(p.scripts.size());
  activity root;
  root.script = 0;
  root.place = 0;
  for (int c = 0; c < p.clocks; ++c) root.regs[static_cast<std::size_t>(c)] = registration{};
  m_live.push_back(std::move(root));
}

void model::arrive(std::uint32_t place, int c, std::uint64_t phase) {
  auto& per_phase = m_clocks[static_cast<std::size_t>(c)].arrivals;
  if (phase < per_phase.size()) ++per_phase[phase][place];
}

void model::resume_one(activity& a, int c) {
  registration& r = *a.regs[static_cast<std::size_t>(c)];
  if (r.resumed) return;
  arrive(a.place, c, r.ph);
  r.resumed = true;
}

void model::drop_one(activity& a, int c) {
  auto& reg = a.regs[static_cast<std::size_t>(c)];
  if (!reg->resumed) arrive(a.place, c, reg->ph);
  reg.reset();
}

void model::end_phases() {
  for (std::size_t c = 0; c < m_clocks.size(); ++c) {
    clock_state& k = m_clocks[c];
    std::size_t count = 0;
    std::size_t alive = 0; // registrations that count as not resumed in k.phase
    for (const activity& a : m_live) {
      const auto& r = a.regs[c];
      if (!r) continue;
      ++count;
      if (r->ph + 1 == k.phase || (r->ph == k.phase && !r->resumed)) ++alive;
    }
    if (count > 0 && alive == 0) ++k.phase;
  }
}

bool model::can_finish_wait(const activity& a) const {
  const op& o = m_program.scripts[static_cast<std::size_t>(a.script)][a.pc];
  for (int c = 0; c < m_program.clocks; ++c) {
    const bool waits_on = o.kind == op_kind::advance_all || c == o.clock;
    const auto& r = a.regs[static_cast<std::size_t>(c)];
    if (waits_on && r && m_clocks[static_cast<std::size_t>(c)].phase <= r->ph) return false;
  }
  return true;
}

std::int64_t model::result_of(int c, std::uint64_t phase) const {
  const auto& values = m_clocks[static_cast<std::size_t>(c)].contributions[phase];
  std::int64_t r = values.front();
  for (std::size_t i = 1; i < values.size(); ++i) r = fold(reduction_of(c, phase), r, values[i]);
  return r;
}

void model::record_state(activity& a) {
  for (int c = 0; c < m_program.clocks; ++c) {
    const auto& r = a.regs[static_cast<std::size_t>(c)];
    a.trace.push_back(r ? static_cast<std::int64_t>(r->ph * 2 + (r->resumed ? 1 : 0)) : -1);
  }
}

bool model::step(std::size_t index) {
  activity& a = m_live[index];
  const auto& script = m_program.scripts[static_cast<std::size_t>(a.script)];
  if (a.pc == script.size()) { // the activity ends: its registrations drop
    for (int c = 0; c < m_program.clocks; ++c)
      if (a.regs[static_cast<std::size_t>(c)]) drop_one(a, c);
    m_out.traces[static_cast<std::size_t>(a.script)] = std::move(a.trace);
    m_live.erase(m_live.begin() + static_cast<std::ptrdiff_t>(index));
    end_phases();
    return true;
  }
  const op o = script[a.pc];
  const int c = o.clock;
  auto& reg = a.regs[static_cast<std::size_t>(c < k_clocks ? c : 0)];
  if (a.waiting) { // an advance that resumed: done once its phases have ended
    if (!can_finish_wait(a)) return false;
    for (int k = 0; k < m_program.clocks; ++k) {
      auto& r = a.regs[static_cast<std::size_t>(k)];
      if (!r || (o.kind != op_kind::advance_all && k != c)) continue;
      const std::uint64_t ended = r->ph;
      if (o.kind == op_kind::advance_reduce) a.trace.push_back(result_of(c, ended));
      a.trace.push_back(m_clocks[static_cast<std::size_t>(k)].arrivals[ended][a.place]);
      r->ph = ended + 1;
      r->resumed = false;
    }
    a.waiting = false;
    record_state(a);
    ++a.pc;
    return true;
  }
  switch (o.kind) {
  case op_kind::resume:
    if (!reg) a.trace.push_back(k_error);
    else {
      resume_one(a, c);
      a.trace.push_back(0);
    }
    break;
  case op_kind::advance:
  case op_kind::advance_reduce:
    if (!reg || (o.kind == op_kind::advance_reduce && reg->resumed)) {
      a.trace.push_back(k_error);
      break;
    }
    if (o.kind == op_kind::advance_reduce)
      m_clocks[static_cast<std::size_t>(c)].contributions[reg->ph].push_back(o.value);
    resume_one(a, c);
    a.waiting = true;
    end_phases();
    return true;
  case op_kind::advance_all:
    for (int k = 0; k < m_program.clocks; ++k)
      if (a.regs[static_cast<std::size_t>(k)]) resume_one(a, k);
    a.waiting = true;
    end_phases();
    return true;
  case op_kind::drop:
    if (!reg) a.trace.push_back(k_error);
    else {
      drop_one(a, c);
      a.trace.push_back(0);
    }
    break;
  case op_kind::spawn: {
    bool ok = true;
    for (int k = 0; k < m_program.clocks; ++k) {
      if (!registered_on(o.mask, k)) continue;
      const auto& r = a.regs[static_cast<std::size_t>(k)];
      // A clocked async on a dropped clock; a registration sent to a place by an activity
      // that has resumed (refused by apgas).
      if (!r || (o.remote != 0 && r->resumed)) ok = false;
    }
    a.trace.push_back(ok ? 0 : k_error);
    if (ok) {
      activity child;
      child.script = static_cast<int>(o.child);
      child.place = m_places[o.child];
      for (int k = 0; k < m_program.clocks; ++k)
        if (registered_on(o.mask, k))
          child.regs[static_cast<std::size_t>(k)] = a.regs[static_cast<std::size_t>(k)];
      m_live.push_back(std::move(child)); // may move `a`: not used below
      activity& self = m_live[index];
      record_state(self);
      ++self.pc;
      end_phases();
      return true;
    }
    break;
  }
  }
  record_state(a);
  ++a.pc;
  end_phases();
  return true;
}

outcome model::run(const program& p, std::uint64_t order) {
  model m(p);
  std::mt19937_64 rng(order);
  std::vector<std::size_t> candidates;
  while (!m.m_live.empty()) {
    for (const clock_state& c : m.m_clocks)
      if (c.phase > static_cast<std::uint64_t>(k_max_phase)) {
        m.m_out.deadlock = true; // too many phases for the counters: not a usable program
        return m.m_out;
      }
    candidates.resize(m.m_live.size());
    std::iota(candidates.begin(), candidates.end(), std::size_t{0});
    if (order != 0) std::shuffle(candidates.begin(), candidates.end(), rng);
    bool progressed = false;
    for (std::size_t i : candidates)
      if (m.step(i)) {
        progressed = true;
        break;
      }
    if (!progressed) {
      m.m_out.deadlock = true;
      return m.m_out;
    }
  }
  return m.m_out;
}

// ---- the generator ----------------------------------------------------------------------

namespace {

class generator {
public:
  generator(std::uint64_t seed, const shape& s) : m_rng(seed), m_shape(s) {}

  program make() {
    program p;
    p.clocks = 1 + static_cast<int>(pick(k_clocks));
    m_budget = 1 + static_cast<int>(pick(static_cast<std::uint64_t>(m_shape.max_activities)));
    p.scripts.emplace_back();
    --m_budget;
    fill(p, 0, static_cast<std::uint8_t>((1U << p.clocks) - 1));
    return p;
  }

private:
  std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : m_rng() % n; }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }

  /// A clock to operate on: one the activity holds, except now and then (a misuse).
  int clock_for(const program& p, std::uint8_t held) {
    if (held != 0 && !chance(m_shape.misuse_percent)) {
      for (;;) {
        const int c = static_cast<int>(pick(static_cast<std::uint64_t>(p.clocks)));
        if (registered_on(held, c)) return c;
      }
    }
    return static_cast<int>(pick(static_cast<std::uint64_t>(p.clocks)));
  }

  void fill(program& p, std::size_t script, std::uint8_t held) {
    std::uint8_t resumed = 0;
    const auto n = pick(static_cast<std::uint64_t>(m_shape.max_ops) + 1);
    for (std::uint64_t i = 0; i < n; ++i) {
      // An activity that holds no clock can only misuse one (or start children without
      // clocks): it stops, now and then after one misuse.
      if (held == 0 && !chance(m_shape.misuse_percent) && (m_budget <= 0 || chance(50))) break;
      if (held != 0 && chance(m_shape.run_percent)) {
        // A run of advances on one clock (plain, or with a contribution, each phase anew).
        op run;
        run.clock = static_cast<std::uint8_t>(clock_for(p, held));
        run.eager = chance(30) ? 1 : 0;
        const bool reduce = chance(50) && !registered_on(resumed, run.clock);
        run.kind = reduce ? op_kind::advance_reduce : op_kind::advance;
        const auto length = 2 + pick(5);
        for (std::uint64_t k = 0; k < length; ++k) {
          run.value = static_cast<std::int32_t>(pick(2001)) - 1000;
          p.scripts[script].push_back(run);
        }
        resumed = static_cast<std::uint8_t>(resumed & ~(1U << run.clock));
        continue;
      }
      op o;
      // Spawns while the budget lasts, so that programs have several activities.
      const auto roll = m_budget > 0 && chance(25) ? 99 : pick(100);
      if (roll < 30) {
        o.kind = op_kind::advance;
      } else if (roll < 50) {
        o.kind = op_kind::advance_reduce;
      } else if (roll < 64) {
        o.kind = op_kind::resume;
      } else if (roll < 76) {
        o.kind = op_kind::advance_all;
      } else if (roll < 81) {
        o.kind = op_kind::drop;
      } else {
        o.kind = op_kind::spawn;
      }
      o.clock = static_cast<std::uint8_t>(clock_for(p, held));
      o.eager = chance(30) ? 1 : 0;
      o.value = static_cast<std::int32_t>(pick(2001)) - 1000;
      const bool is_resumed = registered_on(resumed, o.clock);
      if (o.kind == op_kind::advance_reduce && is_resumed && !chance(m_shape.misuse_percent))
        o.kind = op_kind::advance;
      if (o.kind == op_kind::spawn) {
        if (m_budget <= 0) {
          o.kind = op_kind::resume;
        } else {
          --m_budget;
          // Mostly some of the clocks held (each kept at 3 in 4), now and then any.
          if (chance(m_shape.misuse_percent)) {
            o.mask = static_cast<std::uint8_t>(pick(1U << p.clocks));
          } else {
            for (int c = 0; c < p.clocks; ++c)
              if (registered_on(held, c) && chance(75))
                o.mask |= static_cast<std::uint8_t>(1U << c);
          }
          o.remote = chance(m_shape.remote_percent) ? 1 : 0;
          if (o.remote != 0 && (o.mask & resumed) != 0 && !chance(m_shape.misuse_percent))
            o.remote = 0;
          o.place = static_cast<std::uint32_t>(pick(m_shape.places));
          o.child = static_cast<std::uint32_t>(p.scripts.size());
          p.scripts.emplace_back();
          p.scripts[script].push_back(o);
          // The child starts with the parent's registrations among its clocks (resumed ones
          // too); errors leave it unstarted, which the model says.
          fill(p, o.child, static_cast<std::uint8_t>(o.mask & held));
          continue;
        }
      }
      switch (o.kind) {
      case op_kind::resume:
        resumed = static_cast<std::uint8_t>(resumed | (held & (1U << o.clock)));
        break;
      case op_kind::advance:
      case op_kind::advance_reduce:
        resumed = static_cast<std::uint8_t>(resumed & ~(1U << o.clock));
        break;
      case op_kind::advance_all:
        resumed = 0;
        break;
      case op_kind::drop:
        held = static_cast<std::uint8_t>(held & ~(1U << o.clock));
        break;
      case op_kind::spawn:
        break;
      }
      p.scripts[script].push_back(o);
    }
  }

  std::mt19937_64 m_rng;
  shape m_shape;
  int m_budget = 0;
};

} // namespace

program generate(std::uint64_t seed, const shape& s) {
  for (std::uint64_t attempt = 0;; ++attempt) {
    program p = generator(seed * 0x9E3779B97F4A7C15ULL + attempt, s).make();
    if (!model::run(p, 0).deadlock) return p;
  }
}

// ---- reports and shrinking ------------------------------------------------------------------

std::string describe(const program& p) {
  std::string s = fmt::format("{} clock(s), {} script(s)\n", p.clocks, p.scripts.size());
  const auto where = places_of(p);
  for (std::size_t i = 0; i < p.scripts.size(); ++i) {
    s += fmt::format("  script {} (place {}):", i, where[i]);
    for (const op& o : p.scripts[i]) {
      switch (o.kind) {
      case op_kind::resume:
        s += fmt::format(" resume(c{})", o.clock);
        break;
      case op_kind::advance:
        s += fmt::format(" advance(c{}{})", o.clock, o.eager != 0 ? ",eager" : "");
        break;
      case op_kind::advance_reduce:
        // The operation depends on the phase (see reduction_of).
        s += fmt::format(" advance(c{},reduce {}{})", o.clock, o.value,
                         o.eager != 0 ? ",eager" : "");
        break;
      case op_kind::advance_all:
        s += " advance_all";
        break;
      case op_kind::drop:
        s += fmt::format(" drop(c{})", o.clock);
        break;
      case op_kind::spawn:
        s += fmt::format(" spawn(s{},mask={:#x},{})", o.child, o.mask,
                         o.remote != 0 ? fmt::format("at {}", o.place) : std::string("here"));
        break;
      }
    }
    s += "\n";
  }
  return s;
}

std::vector<program> shrink_candidates(const program& p) {
  std::vector<program> out;
  for (std::size_t s = 0; s < p.scripts.size(); ++s)
    for (std::size_t i = 0; i < p.scripts[s].size(); ++i) {
      program q = p;
      q.scripts[s].erase(q.scripts[s].begin() + static_cast<std::ptrdiff_t>(i));
      out.push_back(std::move(q));
      if (p.scripts[s][i].kind == op_kind::spawn && p.scripts[s][i].remote != 0) {
        program r = p;
        r.scripts[s][i].remote = 0;
        out.push_back(std::move(r));
      }
    }
  return out;
}

} // namespace clock_model
