#include "sparsetrain/models/linear.h"

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/kernels/dense_gemm.h"

namespace sparsetrain {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : Module("Linear"), in_(in_features), out_(out_features) {
  weight_ = &register_parameter("weight", {out_features, in_features});
  if (bias) bias_ = &register_parameter("bias", {out_features});
}

void Linear::check_forward(ConstMatrixView x, MatrixView y) const {
  if (x.cols != in_ || y.cols != out_ || y.rows != x.rows)
    fail("{}: input [{} x {}] and output [{} x {}] do not fit a {} -> {} linear layer", weight_->name(), x.rows, x.cols,
         y.rows, y.cols, in_, out_);
}

void Linear::check_backward(ConstMatrixView dy) const {
  if (dy.rows != x_.rows || dy.cols != out_)
    fail("{}: output gradient shape does not match the forward pass", weight_->name());
}

void Linear::forward(ConstMatrixView x, MatrixView y) {
  const ProfileScope profile("linear forward");
  check_forward(x, y);
  x_ = x;
  pending_post_ = {};
  input_of_ = nullptr;
  const float* b = bias_values();
  const bool bf16 = workspace_.precision == Precision::Bf16;
  if (master().storage() == Storage::Compressed) {
    if (bf16) weight_->bf16_values();
    linear_forward(master().compressed(), b, x, y, workspace_);
  } else if (bf16) {
    round_to_bf16(x, workspace_.dense_x16);
    dense_linear_fwd_bf16(workspace_.dense_x16.view(), dense_bf16(), b, y);
  } else {
    dense_linear_fwd(x, master().dense(), b, y);
  }
}

void Linear::forward_same_input(const Linear& source, ConstMatrixView x, MatrixView y) {
  const bool compressed = master().storage() == Storage::Compressed;
  // What source's workspace holds of x: packed for the sparse kernels, or rounded to bf16 for a
  // dense bf16 weight (a dense fp32 weight reads x itself).
  const bool same_form = compressed
                             ? source.master().storage() == Storage::Compressed
                             : precision() == Precision::Bf16 && source.master().storage() != Storage::Compressed;
  const bool shared = same_form && source.precision() == precision() && source.in_ == in_ &&
                      source.pending_post_.data == nullptr && source.x_.data == x.data && source.x_.rows == x.rows &&
                      source.x_.ld == x.ld;
  if (!shared) {
    forward(x, y);
    return;
  }
  const ProfileScope profile("linear forward");
  check_forward(x, y);
  x_ = x;
  pending_post_ = {};
  input_of_ = source.input_of_ != nullptr ? source.input_of_ : &source.workspace_;
  if (!compressed) {
    dense_linear_fwd_bf16(input_of_->dense_x16.view(), dense_bf16(), bias_values(), y);
    return;
  }
  if (precision() == Precision::Bf16) weight_->bf16_values();
  linear_forward_packed(master().compressed(), bias_values(), *input_of_, y);
}

void Linear::forward_activated(Activation act, ConstMatrixView pre, MatrixView post, MatrixView y) {
  if (pre.ld != pre.cols || post.ld != post.cols || post.rows != pre.rows || post.cols != pre.cols)
    fail("{}: the activation's input [{} x {}] and output [{} x {}] must be whole matrices of one shape",
         weight_->name(), pre.rows, pre.cols, post.rows, post.cols);
  if (weight_->storage() != Storage::Compressed || derivative_needs_output(act)) {
    activation_forward(act, pre.data, post.data, pre.rows * pre.cols);
    forward(post, y);
    return;
  }
  const ProfileScope profile("linear forward");
  check_forward(pre, y);
  x_ = post;
  pending_post_ = post;
  input_of_ = nullptr;
  pending_activation_ = act;
  pending_pre_ = pre;
  const float* b = bias_values();
  if (workspace_.precision == Precision::Bf16) weight_->bf16_values();
  linear_forward_from(
      master().compressed(), b, pre.rows,
      [&](int64_t t0, MatrixView block) {
        for (int64_t i = 0; i < block.rows; ++i) activation_forward_range(act, pre.row(t0 + i), block.row(i), 0, in_);
        return ConstMatrixView(block);
      },
      y, workspace_);
}

void Linear::materialize_input() {
  if (pending_post_.data == nullptr) return;
  activation_forward(pending_activation_, pending_pre_.data, pending_post_.data,
                     pending_post_.rows * pending_post_.cols);
  pending_post_ = {};
}

void Linear::backward(ConstMatrixView dy, MatrixView dx) {
  const ProfileScope profile("linear backward");
  check_backward(dy);
  float* dbias = bias_ != nullptr ? bias_->grad().data() : nullptr;
  Parameter& w = *weight_;
  if (w.wants_dense_grad) {
    materialize_input();
    w.dense_grad = Matrix(out_, in_);
    linear_dense_weight_grad(dy, x_, w.dense_grad);
  }
  const LinearWorkspace& input = input_of_ != nullptr ? *input_of_ : workspace_;
  if (w.storage() == Storage::Compressed) {
    linear_backward(master().compressed(), dy, input, dx, w.grad().data(), dbias, /*accumulate=*/true);
    return;
  }
  materialize_input();
  MatrixView dw{w.grad().data(), out_, in_, in_};
  if (workspace_.precision == Precision::Bf16) {
    // dY rounded once for both products, in a buffer of the calling thread every layer shares.
    thread_local Bf16Matrix dy16;
    round_to_bf16(dy, dy16, dbias, /*accumulate=*/true);
    if (dx.data != nullptr) dense_linear_bwd_data_bf16(dy16.view(), dense_bf16(), dx);
    dense_linear_bwd_weights_bf16(dy16.view(), input.dense_x16.view(), dw, /*accumulate=*/true);
    return;
  }
  if (dx.data != nullptr) dense_linear_bwd_data(dy, master().dense(), dx);
  dense_linear_bwd_weights(dy, x_, dw, dbias, /*accumulate=*/true);
}

void Linear::backward_through(Activation act, ConstMatrixView pre, ConstMatrixView post, MatrixView dpost,
                              MatrixView dx) {
  if (pre.ld != pre.cols || post.ld != post.cols || dpost.ld != dpost.cols || pre.rows != dpost.rows ||
      pre.cols != dpost.cols || post.rows != dpost.rows || post.cols != dpost.cols)
    fail("{}: the activation's input, output and gradient must be whole matrices of one shape", weight_->name());
  Parameter& w = *weight_;
  if (w.storage() != Storage::Compressed || w.wants_dense_grad) {
    activation_backward(act, pre.data, post.data, dpost.data, dpost.data, dpost.rows * dpost.cols);
    backward(dpost, dx);
    return;
  }
  const ProfileScope profile("linear backward");
  check_backward(dpost);
  float* dbias = bias_ != nullptr ? bias_->grad().data() : nullptr;
  linear_backward_from(
      master().compressed(), dpost.rows,
      [&](int64_t t0, MatrixView block) {
        for (int64_t i = 0; i < block.rows; ++i)
          activation_backward_range(act, pre.row(t0 + i), post.row(t0 + i), dpost.row(t0 + i), block.row(i), 0, out_);
        return ConstMatrixView(block);
      },
      workspace_, dx, w.grad().data(), dbias, /*accumulate=*/true);
}

}  // namespace sparsetrain
