#pragma once
// The state of the machine a benchmark runs on, printed before its figures: the load averages,
// the CPU model and count, and the CPU frequency governor (figures from two machines compare
// only as ratios). A figure taken under load misleads: the MPI peers,
// which poll, lose more to other tenants than the runtime does, and the ratios then flatter
// apgas. So every benchmark says the load it started under and warns above 0.5.

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

namespace apgas_bench {

/// @brief Above this 1-minute load a benchmark's figures are not from a quiet machine.
inline constexpr double k_quiet_load = 0.5;

struct machine_state {
  double load_1min = -1; ///< -1: /proc/loadavg could not be read
  double load_5min = -1;
  double load_15min = -1;
  unsigned cpus = 0;
  std::string cpu_model; ///< /proc/cpuinfo's first "model name", empty if none
  std::string governor;  ///< empty: no cpufreq (a VM, a container)
};

inline machine_state read_machine_state() {
  machine_state m;
  std::ifstream loadavg("/proc/loadavg");
  loadavg >> m.load_1min >> m.load_5min >> m.load_15min;
  if (!loadavg) m.load_1min = m.load_5min = m.load_15min = -1;
  m.cpus = std::thread::hardware_concurrency();
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size())
      m.cpu_model = line.substr(colon + 2);
    break;
  }
  std::ifstream governor("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  std::getline(governor, m.governor);
  return m;
}

/// @brief "machine: load 0.12 0.30 0.41 (1, 5, 15 min), 2 CPUs (AMD EPYC), cpufreq governor
/// performance".
inline std::string describe_machine(const machine_state& m) {
  const std::string load = m.load_1min < 0 ? std::string("load unknown")
                                           : fmt::format("load {:.2f} {:.2f} {:.2f} (1, 5, 15 min)",
                                                         m.load_1min, m.load_5min, m.load_15min);
  const std::string model = m.cpu_model.empty() ? std::string() : " (" + m.cpu_model + ")";
  return fmt::format("machine: {}, {} CPUs{}, cpufreq governor {}", load, m.cpus, model,
                     m.governor.empty() ? "none (no cpufreq here)" : m.governor);
}

/// @brief The warning for a machine that is not quiet, or "" when it is.
inline std::string load_warning(const machine_state& m) {
  if (m.load_1min <= k_quiet_load) return {};
  return fmt::format("warning: the 1-minute load is {:.2f}, above {}: these figures are not from "
                     "a quiet machine, and under load the MPI and thread peers lose more than "
                     "apgas does (the ratios flatter apgas)",
                     m.load_1min, k_quiet_load);
}

/// @brief Prints the machine's line to `out` and, when it is loaded, the warning to stderr.
inline void print_machine_state(std::FILE* out = stdout) {
  const machine_state m = read_machine_state();
  fmt::print(out, "{}\n", describe_machine(m));
  std::fflush(out);
  if (const std::string w = load_warning(m); !w.empty()) fmt::print(stderr, "{}\n", w);
}

} // namespace apgas_bench
