#pragma once
// Linear: a module of type "Linear" with weight [out x in] and an optional bias [out], whose
// training passes follow the weight's storage:
//
//   Dense, MaskedDense  oneDNN GEMMs on the dense elements (pruned ones are held at zero, so the
//                       product is exact; the optimizer masks the gradient)
//   Compressed          the sparse kernels of the weight's format (ops/linear.h)
//
// Gradients accumulate (+=), PyTorch-style: the trainer zeroes them before each step. On the
// steps where a sparsity algorithm sets weight.wants_dense_grad (RigL's updates), backward also
// fills weight.dense_grad with the full dense dW (float32, from the float32 dY and X).
//
// In bf16 (set_precision) every product takes bf16 operands with float32 accumulation: the
// weight's bf16 copy (Parameter::bf16_values, written by the optimizer as it updates the float32
// master values), and X and dY rounded as they are packed or converted. A dense weight keeps its
// input's bf16 copy from forward to backward (2 bytes per input element, besides the float32 X the
// model keeps), as the sparse kernels keep theirs packed. Outputs, gradients and the bias stay
// float32.
#include <cstdint>
#include <utility>

#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/nn/module.h"
#include "sparsetrain/ops/activation.h"
#include "sparsetrain/ops/linear.h"

namespace sparsetrain {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  Parameter& weight() { return *weight_; }
  const Parameter& weight() const { return *weight_; }
  Parameter* bias() { return bias_; }
  void set_precision(Precision precision) { workspace_.precision = precision; }
  Precision precision() const { return workspace_.precision; }

  // y [T x out] = x [T x in] W^T + b. x must stay unchanged until backward().
  void forward(ConstMatrixView x, MatrixView y);
  // forward(x, y) where `source` ran forward() on the same x last (attention's query, key and
  // value read one input): when both weights are compressed, in one precision, the sparse
  // kernels read the input source packed instead of packing it again, and when both are dense in
  // bf16 the products read the bf16 copy of x source made; backward() reads it there too, so
  // source must not run forward() again before this layer's backward().
  void forward_same_input(const Linear& source, ConstMatrixView x, MatrixView y);
  // From dy [T x out]: dx [T x in] = dy W (overwritten; skipped when dx.data is null), and the
  // parameter gradients accumulated.
  void backward(ConstMatrixView dy, MatrixView dx);

  // Element-wise activations fused into the packing of the sparse kernels' operands, so the
  // activated matrix is never written and read back whole (pre, post and dpost: whole [T x F]
  // matrices). Dense storage, and activations whose derivative reads their output, take the
  // unfused path with the same results.
  //
  // forward(act(pre)) with x = post [T x in]. The sparse path writes post only if backward()
  // needs the input token-major (RigL's dense gradient); pre and post must stay unchanged until
  // backward().
  void forward_activated(Activation act, ConstMatrixView pre, MatrixView post, MatrixView y);
  // backward() of a layer whose output y = pre went through post = act(pre): dpost [T x out] is
  // dL/dpost, and dL/dy = dpost * act'(pre) is formed block by block as it is packed (the unfused
  // path forms it in dpost). post is read only by activations whose derivative needs it.
  void backward_through(Activation act, ConstMatrixView pre, ConstMatrixView post, MatrixView dpost, MatrixView dx);

  // Multiply-adds of one forward pass over `tokens` tokens: dense-equivalent, and what the kernels
  // execute: the kept weights of a compressed weight, every weight of a dense or masked-dense one
  // (its mask zeroes weights of a dense GEMM, which still multiplies them).
  int64_t dense_macs(int64_t tokens) const { return tokens * in_ * out_; }
  int64_t actual_macs(int64_t tokens) const {
    return weight_->storage() == Storage::Compressed ? tokens * weight_->kept() : dense_macs(tokens);
  }

 private:
  void check_forward(ConstMatrixView x, MatrixView y) const;
  void check_backward(ConstMatrixView dy) const;
  // Writes the input that forward_activated left unwritten, for a pass that reads it token-major.
  void materialize_input();
  // bf16: the dense or masked-dense weight's bf16 copy.
  ConstBf16MatrixView dense_bf16() { return {weight_->bf16_values(), out_, in_, in_}; }
  // The weight and bias read-only, so a pass does not mark the weight's bf16 copy stale.
  const Parameter& master() const { return *weight_; }
  const float* bias_values() const { return bias_ != nullptr ? std::as_const(*bias_).values().data() : nullptr; }

  int64_t in_;
  int64_t out_;
  Parameter* weight_;
  Parameter* bias_ = nullptr;
  ConstMatrixView x_;
  MatrixView pending_post_;  // x_ when forward_activated left it unwritten: act(pending_pre_)
  Activation pending_activation_ = Activation::None;
  ConstMatrixView pending_pre_;
  LinearWorkspace workspace_;
  const LinearWorkspace* input_of_ = nullptr;  // forward_same_input: the workspace holding x packed or rounded
};

}  // namespace sparsetrain
