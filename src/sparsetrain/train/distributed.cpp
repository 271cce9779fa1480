#include "sparsetrain/train/distributed.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <thread>

#include "sparsetrain/core/build_info.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/dist/rank_agreement.h"
#include "sparsetrain/kernels/dense_isa.h"

namespace sparsetrain {

namespace {

uint64_t hash_of(const std::string& text) { return content_hash(text.data(), text.size()); }

}  // namespace

Communicator& Setup::comm() const { return ranks ? *ranks : world_of_one(); }

void distribute(Setup& s, Communicator& comm) {
  if (comm.size() == 1) return;
  const BuildInfo& b = build_info();
  std::vector<Fingerprint> fingerprints = {
      {"the config (after command-line overrides)", hash_of(fmt::format("{}\nseed {}", s.config.text, s.seed))},
      {"the sparsetrain build",
       hash_of(fmt::format("{} {} {} {} {}", b.version, b.compiler, b.build_type, b.flags, b.native))}};
  // Other kernels or GEMM blocking round differently: ranks on other CPU kinds would drift apart.
  fingerprints.push_back({"the instruction sets the kernels and oneDNN run (or oneDNN's version)",
                          hash_of(fmt::format("{} {} {}", isa_name(effective_isa()), dense_isa(), onednn_version()))});
  if (s.data) fingerprints.push_back({"the data", s.data->fingerprint()});
  require_same_start(comm, fingerprints);
  s.ranks = &comm;
  if (s.data) s.data->shard(comm.rank(), comm.size());
  const auto bucket_bytes = static_cast<int64_t>(s.config.run.bucket_cap_mb * 1024.0 * 1024.0);
  s.reducer = std::make_unique<GradientReducer>(comm, s.model->parameters(), bucket_bytes, s.config.precision);
  s.model->on_grads_ready([reducer = s.reducer.get()](std::span<Parameter* const> p) { reducer->ready(p); });
}

void set_threads_per_rank(int threads) {
  if (threads > 0) {
    set_num_threads(threads);
    return;
  }
  if (world().size() == 1) return;
  const int procs = omp_get_num_procs();  // the cores this process may run on
  const auto cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (procs < cores) {
    set_num_threads(procs);  // bound by the launcher to cores of its own
    return;
  }
  set_num_threads(std::max(1, cores / std::max(1, DistributedRuntime::local_ranks())));
}

}  // namespace sparsetrain
