#pragma once
// Data-parallel training (docs/distributed.md): `mpirun -np N sparsetrain train ...` runs N ranks
// of one run. Every rank holds the whole model and reads its own share of every global batch
// (DataSource::shard); their gradients are averaged over the global batch before the optimizer
// step (GradientReducer), so every rank takes the same step and computes the same mask updates;
// loss, metrics and evaluation are reduced over the ranks; rank 0 alone prints and writes.
#include "sparsetrain/dist/communicator.h"
#include "sparsetrain/train/setup.h"

namespace sparsetrain {

// Spreads `s` over the ranks of `comm`; with one rank it changes nothing. Checks first that every
// rank holds the same config, sparsetrain build and data (RanksDisagree otherwise).
void distribute(Setup& s, Communicator& comm);

// Sets the threads of this rank: `threads` when > 0 (--threads, runconfig.num_threads); else,
// under mpirun, OpenMP's default divided among the ranks of this host unless the launcher bound
// each rank to cores of its own; else OpenMP's default (left as it is).
void set_threads_per_rank(int threads);

}  // namespace sparsetrain
