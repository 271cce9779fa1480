#include "sparsetrain/models/mlp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/ops/dropout.h"
#include "sparsetrain/ops/loss.h"

namespace sparsetrain {

MlpLoss parse_mlp_loss(const std::string& text, const std::string& source) {
  if (text == "cross_entropy") return MlpLoss::CrossEntropy;
  if (text == "mse") return MlpLoss::Mse;
  if (text == "set_mse") return MlpLoss::SetMse;
  fail("{}: unknown loss '{}'; expected cross_entropy, mse or set_mse", source, text);
}

const char* mlp_loss_name(MlpLoss loss) {
  switch (loss) {
    case MlpLoss::CrossEntropy: return "cross_entropy";
    case MlpLoss::Mse: return "mse";
    case MlpLoss::SetMse: return "set_mse";
  }
  return "?";
}

void MlpConfig::validate() const {
  if (inputs < 1) fail("mlp model: 'input_size' must be >= 1, got {}", inputs);
  if (classes < 2) fail("mlp model: 'num_classes' must be >= 2, got {}", classes);
  for (std::size_t i = 0; i < hidden.size(); ++i)
    if (hidden[i] < 1) fail("mlp model: 'hidden_sizes[{}]' must be >= 1, got {}", i, hidden[i]);
  if (!(dropout >= 0.0 && dropout < 1.0)) fail("mlp model: 'dropout' must be in [0, 1), got {}", dropout);
  if (activation == Activation::None) fail("mlp model: 'activation' of the hidden layers cannot be none");
  if (loss == MlpLoss::CrossEntropy && output_activation != Activation::None)
    fail("mlp model: 'output_activation' {} with the cross_entropy loss, which applies its own softmax; use none",
         activation_name(output_activation));
  if (loss == MlpLoss::SetMse && output_activation != Activation::Sigmoid)
    fail("mlp model: the set_mse loss needs 'output_activation' sigmoid, got {}", activation_name(output_activation));
  if (!(init_std >= 0.0) || !std::isfinite(init_std))
    fail("mlp model: 'initializer_range' must be a finite number >= 0, got {}", init_std);
}

Mlp::Mlp(const MlpConfig& config) : Model("MLP"), config_(config) {
  config_.validate();
  auto& list = register_module("layers", std::make_unique<ModuleList>());
  int64_t in = config_.inputs;
  for (int64_t out : config_.hidden) {
    layers_.push_back(&list.append(std::make_unique<Linear>(in, out)));
    in = out;
  }
  layers_.push_back(&list.append(std::make_unique<Linear>(in, config_.classes)));
}

std::string Mlp::describe() const {
  return fmt::format("mlp: {} -> {} -> {}, {} hidden, {} output, {} loss, dropout {}{}{}", config_.inputs,
                     fmt::join(config_.hidden, " -> "), config_.classes, activation_name(config_.activation),
                     activation_name(config_.output_activation), mlp_loss_name(config_.loss), config_.dropout,
                     config_.inverted_dropout ? "" : " (scaled at evaluation)",
                     config_.dropout_masks_gradient ? "" : " (not in the backward pass)");
}

void Mlp::init_weights(uint64_t seed) {
  const double stddev = config_.init_std;
  for (Linear* layer : layers_) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(layer->in_features()));
    for (Parameter* p : {&layer->weight(), layer->bias()}) {
      const Philox rng(seed, p->name());
      const bool is_bias = p != &layer->weight();
      auto v = p->values();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (stddev == 0.0) {
          v[i] = static_cast<float>(bound * (2.0 * rng.uniform(i) - 1.0));
        } else {
          v[i] = is_bias ? 0.0f : static_cast<float>(stddev * rng.normal(i));
        }
      }
    }
  }
}

namespace {

// Turns mse_onehot's gradient 2 (out - onehot) / (rows * classes) into the SET reference code's
// pre-activation delta (out - onehot) / rows * s(out) * (1 - s(out)).
void set_reference_output_delta(const Matrix& out, Matrix& grad) {
  const float to_row_mean = static_cast<float>(out.cols()) / 2.0f;
  const float* y = out.data();
  float* g = grad.data();
  for (int64_t i = 0; i < out.size(); ++i) {
    const float s = 1.0f / (1.0f + std::exp(-y[i]));
    g[i] = g[i] * to_row_mean * (s * (1.0f - s));
  }
}

}  // namespace

LossResult Mlp::forward(const Batch& batch, bool training, uint64_t seed, int64_t step) {
  const int64_t rows = batch.rows;
  if (rows < 1 || batch.inputs.rows() != rows || batch.inputs.cols() != config_.inputs)
    fail("mlp: inputs [{} x {}] for a batch of {} rows of {} features", batch.inputs.rows(), batch.inputs.cols(), rows,
         config_.inputs);
  if (batch.targets.size() != static_cast<std::size_t>(rows))
    fail("mlp: {} labels for {} rows", batch.targets.size(), rows);
  const std::size_t n = layers_.size();
  if (pre_.size() != n || pre_[0].rows() != rows) {
    pre_.clear();
    pre_.resize(n);
    post_.clear();
    post_.resize(n);
    dropped_.clear();
    dropped_.resize(n);
    keep_.assign(n, {});
    for (std::size_t i = 0; i < n; ++i) {
      pre_[i] = Matrix(rows, layers_[i]->out_features());
      post_[i] = Matrix(rows, layers_[i]->out_features());
      if (config_.dropout > 0.0 && i + 1 < n) {
        dropped_[i] = Matrix(rows, layers_[i]->out_features());
        keep_[i].assign(static_cast<std::size_t>(pre_[i].size()), 1);
      }
    }
    grad_out_ = Matrix(rows, config_.classes);
    input_ = Matrix(rows, config_.inputs);
  }
  // The first layer's backward reads its input: keep a copy, the caller's batch may change.
  std::copy(batch.inputs.data(), batch.inputs.data() + batch.inputs.size(), input_.data());
  dropped_last_ = training && config_.dropout > 0.0;
  // Dropout that is not inverted is compensated at evaluation as the SET reference code does: the
  // pre-activation of every layer fed by a hidden layer, bias included, times 1 - dropout.
  const bool scale_at_evaluation = !training && config_.dropout > 0.0 && !config_.inverted_dropout;
  const auto keep_rate = static_cast<float>(1.0 - config_.dropout);
  ConstMatrixView x = input_;
  for (std::size_t i = 0; i < n; ++i) {
    const bool hidden = i + 1 < n;
    layers_[i]->forward(x, pre_[i]);
    if (scale_at_evaluation && i > 0) {
      float* z = pre_[i].data();
      for (int64_t k = 0; k < pre_[i].size(); ++k) z[k] *= keep_rate;
    }
    const Activation act = hidden ? config_.activation : config_.output_activation;
    activation_forward(act, pre_[i].data(), post_[i].data(), post_[i].size());
    x = post_[i];
    if (hidden && dropped_last_) {
      dropout_forward(static_cast<float>(config_.dropout),
                      Philox(seed, layers_[i]->weight().name() + ".dropout", static_cast<uint64_t>(step)), post_[i],
                      dropped_[i], keep_[i].data(), config_.inverted_dropout, batch.first_row);
      x = dropped_[i];
    }
  }
  const MatrixView grad = training ? MatrixView(grad_out_) : MatrixView{};
  const LossResult result = config_.loss == MlpLoss::CrossEntropy
                                ? softmax_cross_entropy(post_.back(), batch.targets, grad)
                                : mse_onehot(post_.back(), batch.targets, grad);
  if (training && config_.loss == MlpLoss::SetMse) set_reference_output_delta(post_.back(), grad_out_);
  ready_for_backward_ = training;
  return result;
}

const Matrix& Mlp::outputs() const {
  if (post_.empty()) fail("mlp: outputs() before any forward()");
  return post_.back();
}

void Mlp::backward() {
  if (!ready_for_backward_) fail("mlp: backward() without a training forward()");
  ready_for_backward_ = false;
  // dy: the gradient of layer i's post-activation output, turned into that of its pre-activation.
  MatrixView dy = grad_out_;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const bool hidden = i + 1 < layers_.size();
    if (hidden && dropped_last_ && config_.dropout_masks_gradient)
      dropout_backward(static_cast<float>(config_.dropout), keep_[i].data(), dy, dy, config_.inverted_dropout);
    const Activation act = hidden ? config_.activation : config_.output_activation;
    // set_mse's gradient already is the output layer's pre-activation gradient.
    if (hidden || config_.loss != MlpLoss::SetMse)
      activation_backward(act, pre_[i].data(), post_[i].data(), dy.data, dy.data, dy.rows * dy.cols);
    if (i == 0) {
      layers_[0]->backward(dy, MatrixView{});
      break;
    }
    Matrix& dx = dy.data == grad_a_.data() ? grad_b_ : grad_a_;
    if (dx.rows() != dy.rows || dx.cols() != layers_[i]->in_features()) dx = Matrix(dy.rows, layers_[i]->in_features());
    layers_[i]->backward(dy, dx);
    grads_ready(*layers_[i]);
    dy = dx;
  }
}

Flops Mlp::training_flops(int64_t rows, int64_t /*seq*/) const {
  double dense = 0.0, actual = 0.0;
  for (const Linear* layer : layers_) {
    dense += static_cast<double>(layer->dense_macs(rows));
    actual += static_cast<double>(layer->actual_macs(rows));
  }
  return {6.0 * dense, 6.0 * actual};
}

void Mlp::set_precision(Precision precision) {
  for (Linear* layer : layers_) layer->set_precision(precision);
}

}  // namespace sparsetrain
