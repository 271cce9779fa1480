#pragma once
// Before a run allocates anything: the memory its config needs, estimated from the model and batch
// (docs/training.md#memory), against what the machine has available.
#include <cstdint>
#include <optional>
#include <string>

#include "sparsetrain/config/train_config.h"

namespace sparsetrain {

struct MemoryEstimate {
  double weights = 0;      // values of every parameter, counted dense
  double parameters = 0;   // bytes of the weights, their gradients and the optimizer state
  double activations = 0;  // bytes kept from the forward pass of one batch for the backward pass
  double total() const { return parameters + activations; }
};

// An estimate from the config alone (nothing is built): 4-byte floats for every weight, its
// gradient and the optimizer's buffers (AdamW 2, SGD with momentum 1, else 0), plus a batch's
// activations (gpt: batch x sequence x (n_layer x (16 n_embd + n_head x sequence) + 2 vocab +
// 10 n_embd) floats; mlp: batch x (inputs + 4 x hidden units + 2 x classes) floats).
MemoryEstimate estimate_memory(const TrainConfig& config);

struct AvailableMemory {
  uint64_t bytes = 0;
  std::string source;  // where the figure comes from: "MemAvailable in /proc/meminfo", a cgroup's limit
};

// The least of MemAvailable and, where one is set, the cgroup's memory limit less its usage;
// nullopt when neither can be read.
std::optional<AvailableMemory> available_memory();

// Fails, naming the config, the estimate and what is available, when the run cannot fit.
void check_memory(const TrainConfig& config);

// "1.5 GiB", "44.0 TiB", "512 MiB".
std::string format_bytes(double bytes);

}  // namespace sparsetrain
