// The few MPI process-level calls the runtime needs: MPI's start and end, the job's abort, and
// whether an MPI launcher started this process (the transport itself: mpi_transport.hpp). This
// header does not include mpi.h: nothing outside places/src/transport ever sees MPI.
//
// Lifetime: mpi_init() -> make_mpi_transport() -> ... -> destroy the transport -> mpi_finalize().
#pragma once

#include <optional>

namespace apgas::detail {

/// @brief MPI thread support levels, in increasing order (MPI guarantees the order).
enum class mpi_thread_level { single = 0, funneled = 1, serialized = 2, multiple = 3 };

/// @brief Name of a level ("MPI_THREAD_SERIALIZED", ...).
const char* to_string(mpi_thread_level level) noexcept;

/// @brief Initialises MPI (or, if something else already did, checks it) asking for
/// `requested`. @return the level obtained.
/// Throws std::runtime_error if the level is below MPI_THREAD_SERIALIZED (the transport lets
/// any one thread at a time call MPI); MPI then stays initialised: call mpi_abort().
mpi_thread_level mpi_init(int* argc, char*** argv,
                          mpi_thread_level requested = mpi_thread_level::serialized);

/// @brief True if MPI is initialised and not yet finalised (by anyone).
bool mpi_initialized() noexcept;

/// @brief Finalises MPI if it is initialised and not yet finalised.
/// Throws std::logic_error if an MPI transport still exists.
void mpi_finalize();

/// @brief Ends the whole job with exit code `code` (MPI_Abort on MPI_COMM_WORLD; a plain
/// process exit when MPI is not initialised). Thread-safety: any thread.
[[noreturn]] void mpi_abort(int code) noexcept;

/// @brief Collective over MPI_COMM_WORLD: the lowest rank whose `mine` is true, if any is.
/// pre: MPI initialised.
std::optional<unsigned> mpi_lowest_rank_with(bool mine);

/// @brief This process's rank in MPI_COMM_WORLD. pre: MPI initialised.
unsigned mpi_world_rank();

/// @brief Collective: MPI_Barrier on MPI_COMM_WORLD. pre: MPI initialised.
void mpi_world_barrier();

/// @brief True if this process was started by an MPI launcher (mpirun/mpiexec/srun), judged
/// from its environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, ...). Needs no MPI call.
bool mpi_launched() noexcept;

/// @brief Makes MPI errors on MPI_COMM_WORLD and MPI_COMM_SELF return codes instead of aborting
/// silently; the transport turns them into transport_error with MPI_Error_string's text (it
/// always does so on its own communicator). pre: MPI initialised.
void install_mpi_error_handler();

} // namespace apgas::detail
