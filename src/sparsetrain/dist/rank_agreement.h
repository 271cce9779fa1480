#pragma once
// Checks that the ranks of a data-parallel run hold the same run: at start-up (config, binary and
// data), at every mask update (each sparse parameter's mask) and at every checkpoint (every
// parameter's values). Each is one small collective of hashes; a difference ends the run on every
// rank with one message, from rank 0, rather than N interleaved ones or a silent divergence.
#include <cstdint>
#include <string>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/dist/communicator.h"
#include "sparsetrain/nn/parameter.h"

namespace sparsetrain {

// Thrown on every rank with the same exit code; only rank 0's carries the message to print.
class RanksDisagree : public Error {
 public:
  RanksDisagree(int exit_code, const std::string& message) : Error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// 64-bit XXH3 of bytes, the same on every host.
uint64_t content_hash(const void* data, std::size_t bytes);

// What each rank must agree on before training: named fingerprints, e.g. {"config", hash of the
// resolved config}, {"sparsetrain build", ...}, {"training data", ...}. Rank 0's are broadcast;
// throws RanksDisagree(kExitRanksDisagree) naming every rank and fingerprint that differ.
struct Fingerprint {
  std::string what;
  uint64_t hash;
};
void require_same_start(Communicator& comm, const std::vector<Fingerprint>& fingerprints);

// After a mask update at `step`: throws RanksDisagree(kExitRanksDiverged) naming the first sparse
// parameter whose mask differs between ranks.
void require_same_masks(Communicator& comm, const std::vector<Parameter*>& params, int64_t step);
// At a checkpoint of `step`: the same for every parameter's values.
void require_same_values(Communicator& comm, const std::vector<Parameter*>& params, int64_t step);

}  // namespace sparsetrain
