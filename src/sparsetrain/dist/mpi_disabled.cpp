// A build without MPI: DistributedRuntime refuses an MPI launcher before it gets here.
#include "sparsetrain/core/error.h"
#include "sparsetrain/dist/mpi_communicator.h"

namespace sparsetrain {

std::unique_ptr<Communicator> start_mpi(int&, char**&) { fail("this sparsetrain was built without MPI"); }
void finish_mpi() {}

}  // namespace sparsetrain
