// GLB checkpoints (see apgas/detail/glb_checkpoint.hpp): the plan of a run, and the lines a
// refusal or a failed checkpoint prints.
#include "apgas/detail/glb_checkpoint.hpp"

#include "apgas/exceptions.hpp"
#include "apgas/local_runtime.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace apgas::glb::detail {

namespace {

/// The newest checkpoint of --resume DIR, read once per process (every run of the job looks
/// at the same one).
const store::found& resumed_checkpoint(const std::string& dir) {
  static std::mutex lock;
  static std::optional<store::found> found;
  std::lock_guard guard(lock);
  if (!found) found = store::find_newest(dir); // throws: the next run tries again
  return *found;
}

} // namespace

std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(type.name());
}

checkpoint_plan plan_checkpoints(const parameters& p, std::uint64_t ordinal, std::string describes,
                                 std::span<const std::byte> args) {
  checkpoint_plan plan;
  const local_runtime* rt = local_runtime::current();
  const std::string option_resume = rt != nullptr ? rt->opts().resume : std::string();
  plan.dir = p.checkpoint_dir;
  plan.every = p.checkpoint_every;
  plan.ordinal = ordinal;
  std::vector<std::byte> what(describes.size());
  std::memcpy(what.data(), describes.data(), describes.size());
  what.push_back(std::byte{0});
  what.insert(what.end(), args.begin(), args.end());
  plan.fingerprint = store::sha256_hex(what);
  plan.describes = std::move(describes);
  if (p.resume_from.empty()) return plan;
  // --resume: the run of the job that wrote it; set by the program: this one.
  const bool from_option = p.resume_from == option_resume;
  const store::found c =
      from_option ? resumed_checkpoint(p.resume_from) : store::find_newest(p.resume_from);
  if (from_option && c.what.ordinal != ordinal) return plan; // another run of the job
  if (c.what.kind != "glb")
    throw checkpoint_error(
        fmt::format("checkpoint {} is not of a GLB run (it is of '{}')", c.path, c.what.kind));
  if (c.what.describes != plan.describes)
    throw checkpoint_error(fmt::format("checkpoint {} is of another program: it holds a GLB run "
                                       "of {}, and this run is of {}",
                                       c.path, c.what.describes, plan.describes));
  if (c.what.fingerprint != plan.fingerprint)
    throw checkpoint_error(fmt::format("checkpoint {} is of this program with other parameters "
                                       "(the arguments of its GLB run differ)",
                                       c.path));
  plan.resume = c;
  return plan;
}

std::string part_error(const store::found& c, std::uint32_t place, const char* why) {
  return fmt::format("checkpoint {}: {} {}", c.path, store::part_path(c.path, place), why);
}

std::exception_ptr plain_checkpoint_error(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const multiple_exceptions& m) {
    for (const std::exception_ptr& inner : m.exceptions()) {
      std::exception_ptr found = plain_checkpoint_error(inner);
      if (found != inner) return found;
    }
  } catch (const checkpoint_error& e) {
    return std::make_exception_ptr(checkpoint_error(e.what()));
  } catch (...) {
  }
  return failure;
}

void warn_checkpoint_failed(const std::string& dir, const char* what) noexcept {
  std::fprintf(stderr,
               "apgas: warning: a checkpoint into %s failed, the run goes on without "
               "checkpoints: %s\n",
               dir.c_str(), what);
  std::fflush(stderr);
}

void note_checkpoint(const std::string& dir, std::uint64_t seq, std::uint64_t bytes) noexcept {
  const local_runtime* rt = local_runtime::current();
  if (rt == nullptr || rt->opts().progress_ms == 0) return;
  std::fprintf(stderr, "apgas: checkpoint %llu written to %s (%.1f KiB), committing it\n",
               static_cast<unsigned long long>(seq), dir.c_str(),
               static_cast<double>(bytes) / 1024.0);
  std::fflush(stderr);
}

} // namespace apgas::glb::detail
