#include "sparsetrain/dist/communicator.h"

#include <cstdlib>

#include "sparsetrain/core/error.h"
#include "sparsetrain/dist/mpi_communicator.h"

namespace sparsetrain {

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(std::span<float>) override {}
  void sum(std::span<double>) override {}
  void sum(std::span<Bf16>) override {}
  void max(std::span<uint64_t>) override {}
  void broadcast(std::span<std::byte>, int) override {}
  std::vector<uint64_t> gather(uint64_t value, int) override { return {value}; }
  void barrier() override {}
  void abort(int) override {}
  std::unique_ptr<Communicator> duplicate() override { return std::make_unique<SingleProcess>(); }
  std::string describe() const override { return "single process"; }
};

SingleProcess single_process;
Communicator* world_communicator = &single_process;

// What Open MPI's, MPICH's and PMIx launchers put in each process's environment.
int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}

}  // namespace

Communicator& world() { return *world_communicator; }
Communicator& world_of_one() { return single_process; }

int DistributedRuntime::local_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE"})
    if (const char* value = std::getenv(name); value && std::atoi(value) > 0) return std::atoi(value);
  return 1;
}

DistributedRuntime::DistributedRuntime(int& argc, char**& argv) {
  const int launched = launcher_size();
  if (launched == 0) return;
  if (!kMpiBuilt)
    fail(
        "started by an MPI launcher ({} processes), but this sparsetrain was built without MPI "
        "(SPARSETRAIN_MPI=OFF, or no MPI found when it was configured): install libopenmpi-dev and rebuild "
        "(docs/distributed.md), or run it without mpirun",
        launched);
  world_ = start_mpi(argc, argv);
  world_communicator = world_.get();
}

DistributedRuntime::~DistributedRuntime() {
  if (!world_) return;
  world_communicator = &single_process;
  world_.reset();
  finish_mpi();
}

}  // namespace sparsetrain
