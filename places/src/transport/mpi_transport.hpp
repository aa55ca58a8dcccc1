// The transport over MPI (mpi_transport.cpp). This header does not include mpi.h: nothing
// outside places/src/transport ever sees MPI. MPI's start and end: mpi_process.hpp.
//
// At most one MPI transport exists at a time (they would share MPI at THREAD_SERIALIZED).
#pragma once

#include "apgas/detail/transport.hpp"

#include <memory>

namespace apgas::detail {

/// @brief The transport over MPI: place = rank of a private duplicate of MPI_COMM_WORLD.
/// Collective (MPI_Comm_dup): every rank calls it. pre: mpi_init() succeeded (mpi_process.hpp).
/// Throws std::logic_error if another MPI transport exists, transport_error on MPI errors.
std::unique_ptr<transport> make_mpi_transport(const options& opts = {});

} // namespace apgas::detail
