// The --sync flag and the clock-against-finish report of the phased apps.
#include "apgas_apps/phased.hpp"

#include <fmt/format.h>

namespace apgas_apps {

void add_sync_flag(cli& c, sync_mode& mode) {
  c.choice("--sync",
           "clock: one clock for all phases; finish: one finish per phase; both: each in turn, "
           "and the ratio (default clock)",
           mode, {"clock", "finish", "both"});
}

void add_signal_flag(cli& c, apgas::signal& s) {
  c.choice("--signal",
           "how a clock's advance waits: lazy (suspend at once) or eager (spin a while first); "
           "default lazy",
           s, {"lazy", "eager"});
}

void report_sync(report& r, const sync_times& t) {
  r.seconds = t.clock ? *t.clock : t.finish.value_or(0.0);
  if (t.clock) r.extra.add("clock_seconds", *t.clock);
  if (t.finish) r.extra.add("finish_seconds", *t.finish);
  if (t.clock && t.finish) {
    const double ratio = *t.finish > 0 ? *t.clock / *t.finish : 0.0;
    r.extra.add("clock_over_finish", ratio);
    r.details.push_back(fmt::format("clock {:.4f} s, finish per phase {:.4f} s: clock/finish "
                                    "{:.3f} ({})",
                                    *t.clock, *t.finish, ratio,
                                    ratio <= 1.0 ? "clocks no slower" : "clocks slower"));
  }
}

} // namespace apgas_apps
