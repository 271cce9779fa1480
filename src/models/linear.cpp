#include "models/linear.h"

#include "core/error.h"
#include "core/profile.h"
#include "kernels/dense_gemm.h"

namespace sparsetrain {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : Module("Linear"), in_(in_features), out_(out_features) {
  weight_ = &register_parameter("weight", {out_features, in_features});
  if (bias) bias_ = &register_parameter("bias", {out_features});
}

void Linear::forward(ConstMatrixView x, MatrixView y) {
  const ProfileScope profile("linear forward");
  if (x.cols != in_ || y.cols != out_ || y.rows != x.rows)
    fail("{}: input [{} x {}] and output [{} x {}] do not fit a {} -> {} linear layer", weight_->name(), x.rows,
         x.cols, y.rows, y.cols, in_, out_);
  x_ = x;
  const float* b = bias_ != nullptr ? bias_->values().data() : nullptr;
  if (weight_->storage() == Storage::Compressed)
    linear_forward(weight_->compressed(), b, x, y, workspace_);
  else
    dense_linear_fwd(x, weight_->dense(), b, y);
}

void Linear::backward(ConstMatrixView dy, MatrixView dx) {
  const ProfileScope profile("linear backward");
  if (dy.rows != x_.rows || dy.cols != out_) fail("{}: output gradient shape does not match the forward pass", weight_->name());
  float* dbias = bias_ != nullptr ? bias_->grad().data() : nullptr;
  Parameter& w = *weight_;
  if (w.wants_dense_grad) {
    w.dense_grad = Matrix(out_, in_);
    linear_dense_weight_grad(dy, x_, w.dense_grad);
  }
  if (w.storage() == Storage::Compressed) {
    linear_backward(w.compressed(), dy, workspace_, dx, w.grad().data(), dbias, /*accumulate=*/true);
    return;
  }
  if (dx.data != nullptr) dense_linear_bwd_data(dy, w.dense(), dx);
  MatrixView dw{w.grad().data(), out_, in_, in_};
  dense_linear_bwd_weights(dy, x_, dw, dbias, /*accumulate=*/true);
}

}  // namespace sparsetrain
