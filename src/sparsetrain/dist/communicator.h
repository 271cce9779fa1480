#pragma once
// The processes of one run and the collectives they share. A run started by `mpirun -np N` on a
// build with MPI has N ranks that talk through MPI (dist/mpi_communicator.cpp); a run started any
// other way is one rank alone, whose collectives do nothing, so it behaves exactly as a build
// without MPI.
//
// Every collective must be called by every rank of the communicator, in the same order (MPI's
// rule). Results are the same bits on every rank.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sparsetrain/core/bf16.h"

namespace sparsetrain {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Element-wise over the ranks, in place.
  virtual void sum(std::span<float> values) = 0;
  virtual void sum(std::span<double> values) = 0;
  // bf16 payloads are added pairwise in float32 and rounded back to bf16 at each hop.
  virtual void sum(std::span<Bf16> values) = 0;
  virtual void max(std::span<uint64_t> values) = 0;
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  // Every rank's `value`, in rank order, on `root` (empty elsewhere).
  virtual std::vector<uint64_t> gather(uint64_t value, int root) = 0;
  virtual void barrier() = 0;
  // Ends every rank of the job with `exit_code` (MPI_Abort); returns only on a single rank.
  virtual void abort(int exit_code) = 0;

  // A communicator of the same ranks whose collectives never mix with this one's, for a thread
  // of its own (the gradient reducer's) while this one is used elsewhere; null when the MPI
  // library cannot run collectives from two threads at once.
  virtual std::unique_ptr<Communicator> duplicate() = 0;

  // "MPI (Open MPI v4.1.4), 2 ranks" or "single process".
  virtual std::string describe() const = 0;
};

// The communicator of every rank of this run; a single rank until DistributedRuntime starts MPI.
Communicator& world();
// A communicator of this process alone (collectives that do nothing).
Communicator& world_of_one();
inline bool is_writer_rank() { return world().rank() == 0; }

// Started first thing in main() and alive until it returns: joins the MPI job when the process
// was started by mpirun (or another MPI launcher) and finishes it on destruction. A launcher's
// job on a build without MPI is an error rather than N processes that each think they are alone
// and write the same files.
class DistributedRuntime {
 public:
  DistributedRuntime(int& argc, char**& argv);
  ~DistributedRuntime();
  DistributedRuntime(const DistributedRuntime&) = delete;
  DistributedRuntime& operator=(const DistributedRuntime&) = delete;

  // Ranks of the job on this host (the launcher's local size), 1 outside a job.
  static int local_ranks();

 private:
  std::unique_ptr<Communicator> world_;
};

// Exit codes of a run whose ranks disagree (docs/cli.md): at start-up (config, binary or data
// differ), or during training (a mask or the weights differ after the same step).
inline constexpr int kExitRanksDisagree = 5;
inline constexpr int kExitRanksDiverged = 6;

}  // namespace sparsetrain
