#pragma once
// Model: what the trainer drives. A model is a Module tree (dotted parameter names shared with
// configs, sparsity groups and checkpoints) that computes a loss on a batch and the gradient of
// that loss, layer by layer, with explicit forward and backward passes.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sparsetrain/core/ignore_target.h"
#include "sparsetrain/core/precision.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/nn/module.h"
#include "sparsetrain/ops/loss.h"

namespace sparsetrain {

// One batch: token sequences for a language model, or feature rows for a classifier.
struct Batch {
  int64_t rows = 0;              // sequences or samples
  int64_t seq = 1;               // tokens per sequence (1 for a classifier)
  std::vector<int32_t> ids;      // [rows * seq] input token ids (language models)
  Matrix inputs;                 // [rows x features] (classifiers)
  std::vector<int32_t> targets;  // [rows * seq] next-token ids, masked tokens' ids (else kIgnoreTarget), or labels
  // Masked language modelling (BERT): segment of each token (0 = sentence A, 1 = sentence B),
  // tokens per row before its padding (the keys attention may look at), and per row whether
  // sentence B is a random one (1) or A's continuation (0), as HF's next_sentence_label.
  std::vector<int32_t> token_types;  // [rows * seq]
  std::vector<int32_t> lengths;      // [rows]
  std::vector<int32_t> nsp_labels;   // [rows], empty when the model has no next-sentence task
  // Targets that make a prediction: every token of a causal language model, the masked ones of a BERT.
  int64_t predictions() const {
    return static_cast<int64_t>(targets.size()) - std::count(targets.begin(), targets.end(), kIgnoreTarget);
  }
  // Where these rows start in the step's global batch: a data-parallel rank holds rows
  // [first_row, first_row + rows) of it, and keys per-row randomness (dropout) by the global row.
  int64_t first_row = 0;
};

// Training FLOPs of one forward and backward pass (2 per multiply-add). `dense` counts every
// weight of every linear layer; `actual` counts only the stored ones, which is what the sparse
// kernels execute. Everything else (attention, embeddings, the tied head) counts the same in both.
struct Flops {
  double dense = 0.0;
  double actual = 0.0;
};

class Model : public Module {
 public:
  using Module::Module;

  // Weights drawn from Philox keyed by `seed` and each parameter's name (biases zero, norms one).
  virtual void init_weights(uint64_t seed) = 0;
  // The batch's mean loss and correct predictions. With `training`, keeps what backward() needs
  // and applies dropout keyed by (seed, step).
  virtual LossResult forward(const Batch& batch, bool training, uint64_t seed, int64_t step) = 0;
  // Adds the gradient of the last training forward's mean loss to every parameter's grad().
  virtual void backward() = 0;
  // Training FLOPs of forward + backward on a batch of `rows` x `seq`, with the current masks.
  virtual Flops training_flops(int64_t rows, int64_t seq) const = 0;
  // One line: "gpt: 6 layers, 8 heads, width 512, context 256, vocabulary 8192".
  virtual std::string describe() const = 0;
  // The arithmetic of the products (core/precision.h), float32 until set: bf16 runs every linear
  // layer and the head on bf16 operands with float32 accumulation; the rest stays float32.
  virtual void set_precision(Precision precision) = 0;
  // Data-parallel ranks weight their gradients by their share of the global batch's predictions
  // (train/step.cpp), exact for a loss that is a mean over predictions. A model whose loss also
  // has a mean over rows (BERT's next-sentence loss) multiplies that term's gradient by `factor`
  // in every later backward(), so that a rank can weight it by its share of the rows instead.
  // 1 until set; models without such a term ignore it.
  virtual void set_row_mean_weight(double /*factor*/) {}

  // Called by backward() whenever a group of parameters has its final gradient of the step (a
  // block, a layer), so that a data-parallel run can all-reduce them while the pass goes on
  // (dist/gradient_reducer.h). Parameters never announced are final when backward() returns.
  using GradsReady = std::function<void(std::span<Parameter* const>)>;
  void on_grads_ready(GradsReady callback) { grads_ready_ = std::move(callback); }

 protected:
  void grads_ready(Module& module) {
    if (!grads_ready_) return;
    const std::vector<Parameter*> params = module.parameters();
    grads_ready_(params);
  }

 private:
  GradsReady grads_ready_;
};

}  // namespace sparsetrain
