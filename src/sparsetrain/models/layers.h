#pragma once
// Parameter holders for the non-linear layers; their passes are the functions in ops/.
// The module types ("Embedding", "LayerNorm") are what the default sparsity filter reads.
#include <cstdint>
#include <memory>
#include <string>

#include "sparsetrain/nn/module.h"

namespace sparsetrain {

// weight [num x dim]
struct Embedding : Module {
  Embedding(int64_t num, int64_t dim) : Module("Embedding"), weight(register_parameter("weight", {num, dim})) {}
  Parameter& weight;
};

// weight (gamma) and bias (beta) [dim]
struct LayerNorm : Module {
  LayerNorm(int64_t dim, float eps_)
      : Module("LayerNorm"), weight(register_parameter("weight", {dim})), bias(register_parameter("bias", {dim})),
        eps(eps_) {}
  Parameter& weight;
  Parameter& bias;
  float eps;
};

// A container whose children are named 0, 1, 2, ... (torch.nn.ModuleList).
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  template <typename M>
  M& append(std::unique_ptr<M> m) {
    return register_module(std::to_string(size_++), std::move(m));
  }

 private:
  int64_t size_ = 0;
};

}  // namespace sparsetrain
