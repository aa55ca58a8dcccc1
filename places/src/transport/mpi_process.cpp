// The process-level MPI calls (see mpi_process.hpp): MPI's start and end, the job's abort,
// and whether an MPI launcher started this process. Each is made before any transport exists
// or after the last one is gone, so they need no lock.
#include "mpi_process.hpp"

#include "mpi_calls.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace apgas::detail {

std::string mpi_error_text(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int length = 0;
  if (MPI_Error_string(code, text.data(), &length) != MPI_SUCCESS)
    return "MPI error code " + std::to_string(code);
  return {text.data(), static_cast<std::size_t>(length)};
}

void throw_mpi_failed(int rc, const char* what) {
  throw transport_error(std::string("apgas transport: ") + what + " failed: " + mpi_error_text(rc));
}

bool mpi_is_initialized() noexcept {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

bool mpi_is_finalized() noexcept {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

namespace {
int to_mpi(mpi_thread_level level) noexcept {
  switch (level) {
  case mpi_thread_level::single:
    return MPI_THREAD_SINGLE;
  case mpi_thread_level::funneled:
    return MPI_THREAD_FUNNELED;
  case mpi_thread_level::serialized:
    return MPI_THREAD_SERIALIZED;
  case mpi_thread_level::multiple:
    return MPI_THREAD_MULTIPLE;
  }
  return MPI_THREAD_SERIALIZED;
}
} // namespace

mpi_thread_level from_mpi(int level) noexcept {
  if (level >= MPI_THREAD_MULTIPLE) return mpi_thread_level::multiple;
  if (level >= MPI_THREAD_SERIALIZED) return mpi_thread_level::serialized;
  if (level >= MPI_THREAD_FUNNELED) return mpi_thread_level::funneled;
  return mpi_thread_level::single;
}

const char* to_string(mpi_thread_level level) noexcept {
  switch (level) {
  case mpi_thread_level::single:
    return "MPI_THREAD_SINGLE";
  case mpi_thread_level::funneled:
    return "MPI_THREAD_FUNNELED";
  case mpi_thread_level::serialized:
    return "MPI_THREAD_SERIALIZED";
  case mpi_thread_level::multiple:
    return "MPI_THREAD_MULTIPLE";
  }
  return "MPI_THREAD_(unknown)";
}

mpi_thread_level mpi_init(int* argc, char*** argv, mpi_thread_level requested) {
  int provided = MPI_THREAD_SINGLE;
  if (mpi_is_finalized())
    throw std::runtime_error("apgas: MPI was already finalized; it cannot be initialised again");
  if (mpi_is_initialized()) {
    mpi_check(MPI_Query_thread(&provided), "MPI_Query_thread");
  } else {
    const int rc = MPI_Init_thread(argc, argv, to_mpi(requested), &provided);
    if (rc != MPI_SUCCESS)
      throw std::runtime_error("apgas: MPI_Init_thread failed: " + mpi_error_text(rc));
  }
  const mpi_thread_level level = from_mpi(provided);
  if (level < mpi_thread_level::serialized)
    throw std::runtime_error(
        std::string("apgas: MPI provides only ") + to_string(level) +
        ", but the runtime needs at least MPI_THREAD_SERIALIZED (any one worker at a time "
        "talks to MPI, not always the same one). Use an MPI library built with thread support "
        "(Open MPI >= 3 and MPICH provide it by default).");
  return level;
}

bool mpi_initialized() noexcept { return mpi_is_initialized() && !mpi_is_finalized(); }

void mpi_finalize() {
  if (mpi_transport_exists())
    throw std::logic_error("apgas: mpi_finalize() while an MPI transport still exists");
  if (!mpi_is_initialized() || mpi_is_finalized()) return;
  const int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS)
    throw std::runtime_error("apgas: MPI_Finalize failed: " + mpi_error_text(rc));
}

void mpi_abort(int code) noexcept {
  if (mpi_is_initialized() && !mpi_is_finalized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::fflush(nullptr);
  std::_Exit(code); // not initialised (or MPI_Abort returned): still end this process
}

std::optional<unsigned> mpi_lowest_rank_with(bool mine) {
  int size = 0;
  mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const int candidate = mine ? static_cast<int>(mpi_world_rank()) : size;
  int lowest = size;
  mpi_check(MPI_Allreduce(&candidate, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD),
            "MPI_Allreduce");
  if (lowest == size) return std::nullopt;
  return static_cast<unsigned>(lowest);
}

unsigned mpi_world_rank() {
  int rank = 0;
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  return static_cast<unsigned>(rank);
}

void mpi_world_barrier() { mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

bool mpi_launched() noexcept {
  // Open MPI, MPICH/Hydra and Intel MPI (PMI), PMIx launchers (Open MPI 5, srun --mpi=pmix),
  // Slurm's srun with PMI-1/2.
  static constexpr std::array<const char*, 5> k_variables = {
      "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS",
  };
  return std::any_of(k_variables.begin(), k_variables.end(),
                     [](const char* name) { return std::getenv(name) != nullptr; });
}

void install_mpi_error_handler() {
  if (!mpi_is_initialized() || mpi_is_finalized())
    throw std::logic_error("apgas: install_mpi_error_handler() needs MPI initialised");
  mpi_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  mpi_check(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

} // namespace apgas::detail
