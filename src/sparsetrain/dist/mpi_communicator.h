#pragma once
// The MPI side of dist/communicator.h, kept apart so that only dist/ sees mpi.h. On a build
// without MPI (SPARSETRAIN_MPI=OFF or none found) kMpiBuilt is false and the functions throw.
#include <memory>

#include "sparsetrain/dist/communicator.h"

namespace sparsetrain {

#ifdef SPARSETRAIN_HAVE_MPI
inline constexpr bool kMpiBuilt = true;
#else
inline constexpr bool kMpiBuilt = false;
#endif

// MPI_Init_thread (asking for MPI_THREAD_MULTIPLE, so the gradient reducer's thread can run its
// collectives beside the main thread's) and MPI_COMM_WORLD.
std::unique_ptr<Communicator> start_mpi(int& argc, char**& argv);
void finish_mpi();

}  // namespace sparsetrain
