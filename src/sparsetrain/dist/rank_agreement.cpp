#include "sparsetrain/dist/rank_agreement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include <cstring>

namespace sparsetrain {

namespace {

// Which entries of `hashes` differ between ranks: one all-reduce of max(h) and max(~h) (= ~min h).
std::vector<bool> differing(Communicator& comm, const std::vector<uint64_t>& hashes) {
  std::vector<uint64_t> both(2 * hashes.size());
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    both[2 * i] = hashes[i];
    both[2 * i + 1] = ~hashes[i];
  }
  comm.max(both);
  std::vector<bool> out(hashes.size());
  for (std::size_t i = 0; i < hashes.size(); ++i) out[i] = both[2 * i] != ~both[2 * i + 1];
  return out;
}

void require_same(Communicator& comm, const std::vector<Parameter*>& params, const std::vector<uint64_t>& hashes,
                  const char* what, int64_t step) {
  const std::vector<bool> differ = differing(comm, hashes);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < differ.size(); ++i)
    if (differ[i]) names.push_back(params[i]->name());
  if (names.empty()) return;
  throw RanksDisagree(kExitRanksDiverged,
                      comm.rank() != 0
                          ? std::string()
                          : fmt::format("the ranks diverged at step {}: the {} of '{}' differ{} between "
                                        "ranks; the last checkpoint before it is complete (a run must "
                                        "use the same binary and CPU kind on every rank: "
                                        "docs/distributed.md)",
                                        step, what, fmt::join(names, "', '"), names.size() == 1 ? "s" : ""));
}

}  // namespace

uint64_t content_hash(const void* data, std::size_t bytes) { return XXH3_64bits(data, bytes); }

void require_same_start(Communicator& comm, const std::vector<Fingerprint>& fingerprints) {
  std::vector<uint64_t> theirs(fingerprints.size());
  for (std::size_t i = 0; i < fingerprints.size(); ++i) theirs[i] = fingerprints[i].hash;
  comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(theirs)), 0);
  uint64_t differs = 0;  // bit i: fingerprint i differs from rank 0's
  for (std::size_t i = 0; i < fingerprints.size(); ++i)
    if (fingerprints[i].hash != theirs[i]) differs |= uint64_t{1} << i;
  const std::vector<uint64_t> by_rank = comm.gather(differs, 0);
  uint64_t any = 0;
  for (uint64_t d : by_rank) any |= d;
  std::vector<uint64_t> flag = {any};
  comm.max(flag);
  if (flag[0] == 0) return;
  std::vector<std::string> lines;
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    std::vector<std::string> what;
    for (std::size_t i = 0; i < fingerprints.size(); ++i)
      if (by_rank[r] >> i & 1) what.push_back(fingerprints[i].what);
    if (!what.empty()) lines.push_back(fmt::format("rank {}: {}", r, fmt::join(what, ", ")));
  }
  throw RanksDisagree(kExitRanksDisagree,
                      comm.rank() != 0 ? std::string()
                                       : fmt::format("the ranks of this run differ from rank 0 in what they read: "
                                                     "{}; every rank must run the same sparsetrain build on the same "
                                                     "config and data (docs/distributed.md)",
                                                     fmt::join(lines, "; ")));
}

void require_same_masks(Communicator& comm, const std::vector<Parameter*>& params, int64_t step) {
  std::vector<Parameter*> sparse;
  std::vector<uint64_t> hashes;
  for (Parameter* p : params) {
    if (!p->is_sparse()) continue;
    const Mask m = p->mask();
    sparse.push_back(p);
    hashes.push_back(content_hash(m.data(), static_cast<std::size_t>(m.rows() * m.cols())));
  }
  require_same(comm, sparse, hashes, "masks", step);
}

void require_same_values(Communicator& comm, const std::vector<Parameter*>& params, int64_t step) {
  std::vector<uint64_t> hashes;
  for (const Parameter* p : params) {
    const std::span<const float> v = p->values();
    hashes.push_back(content_hash(v.data(), v.size_bytes()));
  }
  require_same(comm, params, hashes, "values", step);
}

}  // namespace sparsetrain
