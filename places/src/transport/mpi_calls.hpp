// What the files that call MPI share around their calls (the transport, mpi_transport.cpp; its
// collectives and one-sided access, mpi_collectives.*, p2p_collectives.* and mpi_rma.*; MPI's
// start and end, mpi_process.cpp): turning MPI error codes into exceptions, and MPI's state.
// Includes mpi.h, so only those files include it.
#pragma once

#include "apgas/detail/transport.hpp"

#include "mpi_process.hpp"
#include <mpi.h>

#include <string>

namespace apgas::detail {

/// @brief MPI_Error_string's text for `code` (its number, if MPI has no text for it).
std::string mpi_error_text(int code);

/// @brief Throws transport_error "apgas transport: <what> failed: <MPI's text for rc>". Out of
/// line and cold: mpi_check() is inlined on the hot paths.
[[noreturn, gnu::cold, gnu::noinline]] void throw_mpi_failed(int rc, const char* what);

/// @brief Throws transport_error unless `rc` is MPI_SUCCESS. Inline, its error path out of
/// line: it wraps every MPI call, those on an `at`'s path and an idle poll's MPI_Test included.
inline void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    throw_mpi_failed(rc, what);
}

/// @brief MPI_Initialized (true also after MPI_Finalize).
bool mpi_is_initialized() noexcept;
/// @brief MPI_Finalized.
bool mpi_is_finalized() noexcept;

/// @brief The level of MPI's thread support constant `level` (MPI_THREAD_*).
mpi_thread_level from_mpi(int level) noexcept;

/// @brief True while an MPI transport exists (mpi_finalize() refuses to run then). Any thread.
bool mpi_transport_exists() noexcept;

} // namespace apgas::detail
