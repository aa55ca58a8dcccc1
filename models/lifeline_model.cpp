// The discrete-event model of the lifeline protocol (see lifeline_model.hpp).
#include "lifeline_model.hpp"

#include <fmt/format.h>

namespace glb_model {

using namespace apgas::detail::glb;

model::model(const config& c) : m_c(c), m_rng(c.seed ^ 0x243F6A8885A308D3ULL), m_places(c.places) {
  if (m_c.places == 0) throw std::invalid_argument("glb_model: no places");
  m_c.items_per_batch = std::max(m_c.items_per_batch, 1U);
  m_c.lifeline_base = std::max(m_c.lifeline_base, 2U);
  m_c.random_victims = std::max(m_c.random_victims, 1U);
  if (m_c.lifeline_count == 0)
    m_c.lifeline_count = lifeline_dimensions(m_c.places, m_c.lifeline_base);
  if (m_c.random_steals == 0) m_c.random_steals = m_c.lifeline_count;
  if (m_c.chain > 0) {
    m_total = m_c.chain + (m_c.burst_every == 0 ? 0 : (m_c.chain / m_c.burst_every) * m_c.burst);
  } else {
    m_total = m_c.items;
  }
  for (place_id h = 0; h < m_c.places; ++h) {
    place& pl = m_places[h];
    if (m_c.places > 1)
      pl.lifelines = lifelines_of(h, m_c.places, m_c.lifeline_base, m_c.lifeline_count);
    pl.registered.assign(pl.lifelines.size(), false);
  }
  if (m_c.chain > 0) {
    m_places[0].initial.emplace_back(0, 1); // the chain grows from place 0
  } else if (m_total > 0) {
    switch (m_c.layout) {
    case start_layout::at_place_0:
      m_places[0].initial.emplace_back(0, m_total);
      break;
    case start_layout::at_last_place:
      m_places.back().initial.emplace_back(0, m_total);
      break;
    case start_layout::spread:
      for (place_id h = 0; h < m_c.places; ++h) {
        const std::uint64_t lo = m_total * h / m_c.places;
        const std::uint64_t hi = m_total * (h + 1) / m_c.places;
        if (hi > lo) m_places[h].initial.emplace_back(lo, hi);
      }
      break;
    }
  }
  if (m_c.check_each_item) m_seen.assign(m_total, 0);
}

result model::run() {
  // The run's finish starts place 0's start activity, which starts the others along the tree.
  counted(+1, 0);
  m_events.push({0, m_seq++, 0, false, msg::start, 0, 0});
  while (!m_events.empty()) {
    const event e = m_events.top();
    m_events.pop();
    ++m_result.events;
    deliver(e);
  }
  if (!m_terminated) fail("the finish never terminated (a thief waits forever, or work was lost)");
  std::uint64_t steals = 0, messages = 0, received = 0, activations = 0;
  for (const place& pl : m_places) {
    steals += pl.steals;
    messages += pl.sent;
    received += pl.received;
    activations += pl.activations;
    m_result.steals_max = std::max(m_result.steals_max, pl.steals);
    m_result.steal_messages_max = std::max(m_result.steal_messages_max, pl.sent);
    m_result.received_max = std::max(m_result.received_max, pl.received);
    m_result.activations_max = std::max(m_result.activations_max, pl.activations);
    if (pl.first_item < 0) ++m_result.places_never_fed;
    else m_result.spread = std::max(m_result.spread, pl.first_item);
  }
  const double p = m_c.places;
  m_result.steals_mean = static_cast<double>(steals) / p;
  m_result.steal_messages_mean = static_cast<double>(messages) / p;
  m_result.received_mean = static_cast<double>(received) / p;
  m_result.activations_mean = static_cast<double>(activations) / p;
  m_result.processed = m_processed;
  if (m_result.end > 0)
    m_result.efficiency = static_cast<double>(m_processed) * static_cast<double>(m_c.t_item) /
                          (p * static_cast<double>(m_result.end));
  return m_result;
}

// ---- activities ---------------------------------------------------------------------------

void model::run_next(place_id p, time_ns t) {
  place& pl = m_places[p];
  if (pl.running || pl.ready.empty()) return;
  const activity a = pl.ready.front();
  pl.ready.pop_front();
  pl.running = true;
  switch (a.what) {
  case role::start:
    for (place_id c : tree_children_of(p, m_c.places)) {
      counted(+1, t); // an async_at of the run's finish
      send(p, c, msg::start, t);
    }
    if (size(pl.initial) == 0) {
      start_quiet(p, t);
      end_activity(p, t);
      return;
    }
    pl.work = std::move(pl.initial);
    pl.initial.clear();
    ++pl.working;
    start_batch(p, t);
    return;
  case role::deal:
    for (std::size_t i = 0; i < pl.lifelines.size(); ++i)
      if (pl.lifelines[i] == a.from) pl.registered[i] = false;
    ++pl.activations;
    ++pl.working;
    pl.work = take_loot(a.payload);
    start_batch(p, t);
    return;
  case role::thief:
    if (pl.answer) { // loot: the thief works again
      pl.work = take_loot(*pl.answer);
      pl.answer.reset();
      pl.thief = false;
      ++pl.working;
      start_batch(p, t);
      return;
    }
    thief_step(p, t); // refused: the next attempt
    return;
  }
}

void model::start_batch(place_id p, time_ns t) {
  place& pl = m_places[p];
  const std::uint64_t k = std::min<std::uint64_t>(m_c.items_per_batch, size(pl.work));
  pl.in_batch = true;
  pl.batch = k;
  m_events.push({t + static_cast<time_ns>(k) * m_c.t_item, m_seq++, p, true, msg::start, 0, 0});
}

void model::on_batch_end(place_id p, time_ns t) {
  place& pl = m_places[p];
  pl.in_batch = false;
  process(p, pl.batch, t);
  // The poll between batches: what arrived meanwhile.
  while (!pl.inbox.empty()) {
    const event e = pl.inbox.front();
    pl.inbox.pop_front();
    handle(p, e);
  }
  serve(p, t);
  if (size(pl.work) > 0) start_batch(p, t);
  else end_work(p, t);
}

void model::serve(place_id p, time_ns t) {
  place& pl = m_places[p];
  while (!pl.random_thieves.empty() || !pl.lifeline_thieves.empty()) {
    const bool lifeline = pl.random_thieves.empty();
    place_id thief = 0;
    if (lifeline) {
      thief = pl.lifeline_thieves.back();
      pl.lifeline_thieves.pop_back();
    } else {
      thief = pl.random_thieves.front();
      pl.random_thieves.erase(pl.random_thieves.begin());
    }
    bag loot = split(pl.work);
    if (loot.empty()) { // give it back
      if (lifeline) pl.lifeline_thieves.push_back(thief);
      else if (pl.working > 1) pl.random_thieves.push_back(thief);
      else send(p, thief, msg::refusal, t);
      return;
    }
    const std::uint32_t i = keep_loot(std::move(loot));
    if (lifeline) {
      if (!m_c.uncounted_lifeline_loot) counted(+1, t); // an async_at of the run's finish
      send(p, thief, msg::deal, t, i);
    } else {
      send(p, thief, msg::loot, t, i);
    }
  }
}

void model::end_work(place_id p, time_ns t) {
  place& pl = m_places[p];
  if (--pl.working > 0) return end_activity(p, t);
  std::vector<place_id> refused;
  refused.swap(pl.random_thieves);
  for (place_id r : refused) send(p, r, msg::refusal, t);
  if (m_c.places > 1 && !pl.thief) {
    pl.thief = true;
    pl.attempts = 0;
    return thief_step(p, t);
  }
  end_activity(p, t);
}

void model::thief_step(place_id p, time_ns t) {
  place& pl = m_places[p];
  if (pl.working > 0) { // the place works again: the thief stops
    pl.thief = false;
    return end_activity(p, t);
  }
  if (pl.attempts == m_c.random_steals) { // give up: the lifelines
    pl.thief = false;
    for (std::size_t i = 0; i < pl.lifelines.size(); ++i) {
      if (pl.registered[i]) continue;
      pl.registered[i] = true;
      send(p, pl.lifelines[i], msg::lifeline, t);
    }
    return end_activity(p, t);
  }
  ++pl.attempts;
  ++pl.steals;
  send(p, pick_victim(p), msg::steal, t);
  pl.thief_waiting = true;
  pl.running = false; // suspended: the worker runs other activities meanwhile
  run_next(p, t);
}

void model::end_activity(place_id p, time_ns t) {
  m_places[p].running = false;
  counted(-1, t);
  run_next(p, t);
}

void model::start_quiet(place_id p, time_ns t) {
  if (m_c.places == 1) return;
  place& pl = m_places[p];
  for (std::size_t i = 0; i < pl.lifelines.size(); ++i) {
    pl.registered[i] = true;
    send(p, pl.lifelines[i], msg::lifeline, t);
  }
  if (m_c.tree && p > 0 &&
      std::find(pl.lifelines.begin(), pl.lifelines.end(), tree_parent_of(p)) == pl.lifelines.end())
    send(p, tree_parent_of(p), msg::lifeline, t);
}

place_id model::pick_victim(place_id p) {
  const place_id others = m_c.places - 1;
  std::uint64_t v = 0;
  if (others <= m_c.random_victims) {
    v = m_rng.below(others);
  } else { // victim i of p's m, as drawn once at the start
    random_source draw((std::uint64_t{p} << 32) ^ m_rng.below(m_c.random_victims) ^
                       (m_c.seed << 16));
    v = draw.below(others);
  }
  return static_cast<place_id>(v >= p ? v + 1 : v);
}

// ---- messages -------------------------------------------------------------------------------

void model::send(place_id from, place_id to, msg kind, time_ns t, std::uint32_t payload) {
  const time_ns delay =
      m_c.latency + (m_c.jitter > 0 ? static_cast<time_ns>(m_rng.below(m_c.jitter + 1)) : 0);
  m_events.push({t + delay, m_seq++, to, false, kind, from, payload});
  if (kind == msg::steal || kind == msg::lifeline || kind == msg::loot || kind == msg::refusal)
    ++m_places[from].sent;
  if (kind == msg::loot || kind == msg::refusal) ++m_uncounted_work_messages;
}

void model::deliver(const event& e) {
  if (e.batch_end) return on_batch_end(e.place, e.at);
  place& pl = m_places[e.place];
  if (pl.in_batch) { // the worker polls between batches only
    pl.inbox.push_back(e);
    return;
  }
  handle(e.place, e);
}

void model::handle(place_id p, const event& e) {
  place& pl = m_places[p];
  const time_ns t = e.at;
  if (e.kind != msg::start) ++pl.received;
  switch (e.kind) {
  case msg::start:
    pl.ready.push_back({role::start});
    break;
  case msg::deal:
    if (m_c.uncounted_lifeline_loot) counted(+1, t); // counted only once it arrived
    pl.ready.push_back({role::deal, e.from, e.payload});
    break;
  case msg::steal:
    if (pl.working > 0) pl.random_thieves.push_back(e.from);
    else send(p, e.from, msg::refusal, t);
    return;
  case msg::lifeline:
    if (std::find(pl.lifeline_thieves.begin(), pl.lifeline_thieves.end(), e.from) ==
        pl.lifeline_thieves.end())
      pl.lifeline_thieves.push_back(e.from);
    return;
  case msg::loot:
  case msg::refusal:
    --m_uncounted_work_messages;
    if (!pl.thief_waiting) fail(fmt::format("place {}: an answer nobody waits for", p));
    pl.thief_waiting = false;
    if (e.kind == msg::loot) pl.answer = e.payload;
    pl.ready.push_back({role::thief});
    break;
  }
  run_next(p, t);
}

// ---- bags -----------------------------------------------------------------------------------

std::uint64_t model::size(const bag& b) const {
  std::uint64_t n = 0;
  for (const range& r : b) n += r.second - r.first;
  return n;
}

model::bag model::split(bag& b) const {
  bag loot;
  for (range& r : b) {
    const std::uint64_t half = (r.second - r.first) / 2;
    if (half == 0) continue;
    loot.emplace_back(r.second - half, r.second);
    r.second -= half;
  }
  return loot;
}

void model::process(place_id p, std::uint64_t k, time_ns t) {
  place& pl = m_places[p];
  if (k > 0 && pl.first_item < 0) pl.first_item = t - static_cast<time_ns>(k) * m_c.t_item;
  pl.items += k;
  m_processed += k;
  while (k > 0) {
    if (pl.work.empty()) return fail(fmt::format("place {}: a batch larger than its bag", p));
    range& r = pl.work.back();
    if (m_c.chain == 0) { // in bulk
      const std::uint64_t take = std::min(k, r.second - r.first);
      if (m_c.check_each_item)
        for (std::uint64_t id = r.first; id < r.first + take; ++id) count_item(id);
      r.first += take;
      k -= take;
      if (r.first == r.second) pl.work.pop_back();
      continue;
    }
    const std::uint64_t id = r.first++; // one at a time: chain ids make more
    if (r.first == r.second) pl.work.pop_back();
    --k;
    count_item(id);
    if (id < m_c.chain) {
      if (id + 1 < m_c.chain) pl.work.emplace_back(id + 1, id + 2);
      if (m_c.burst_every != 0 && id % m_c.burst_every == m_c.burst_every - 1) {
        const std::uint64_t first = m_c.chain + (id / m_c.burst_every) * m_c.burst;
        pl.work.emplace_back(first, first + m_c.burst);
      }
    }
  }
}

void model::count_item(std::uint64_t id) {
  if (!m_c.check_each_item) return;
  if (id >= m_seen.size()) return fail(fmt::format("item {} does not exist", id));
  if (++m_seen[id] > 1) fail(fmt::format("item {} processed twice", id));
}

std::uint32_t model::keep_loot(bag b) {
  if (!m_free_loot.empty()) {
    const std::uint32_t i = m_free_loot.back();
    m_free_loot.pop_back();
    m_loot[i] = std::move(b);
    return i;
  }
  m_loot.push_back(std::move(b));
  return static_cast<std::uint32_t>(m_loot.size() - 1);
}

model::bag model::take_loot(std::uint32_t i) {
  bag b = std::move(m_loot[i]);
  m_loot[i].clear();
  m_free_loot.push_back(i);
  return b;
}

// ---- the finish -----------------------------------------------------------------------------

void model::counted(int delta, time_ns t) {
  if (m_terminated && delta > 0) fail("a counted activity was created after termination");
  m_count += delta;
  if (m_count < 0) fail("the finish's count went negative");
  if (m_count == 0 && !m_terminated) {
    m_terminated = true;
    m_result.end = t;
    check_end_state();
  }
}

void model::check_end_state() {
  if (m_processed != m_total)
    fail(fmt::format("terminated early: {} of {} items processed", m_processed, m_total));
  if (m_uncounted_work_messages != 0)
    fail(fmt::format("terminated with {} loot or answers in flight", m_uncounted_work_messages));
  for (place_id p = 0; p < m_c.places; ++p) {
    const place& pl = m_places[p];
    if (size(pl.work) != 0 || size(pl.initial) != 0)
      fail(fmt::format("terminated with work at place {}", p));
    if (pl.thief_waiting || pl.running || !pl.ready.empty())
      fail(fmt::format("terminated with an activity alive at place {}", p));
  }
  for (std::uint64_t id = 0; id < m_seen.size(); ++id)
    if (m_seen[id] != 1) {
      fail(fmt::format("item {} processed {} times", id, m_seen[id]));
      break;
    }
}

void model::fail(const std::string& what) {
  if (m_result.errors.size() < 16) m_result.errors.push_back(what);
}

} // namespace glb_model
