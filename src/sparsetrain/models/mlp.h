#pragma once
// MLP classifier: Linear layers named layers.0, layers.1, ... (layers.{i}.weight [out x in],
// layers.{i}.bias [out]) with an activation and dropout after every hidden layer, an optional
// output activation, and softmax cross-entropy or MSE (against one-hot labels) as the loss.
// `set_mse` is the SET reference code's (Mocanu et al. 2018) MSE, kept to reproduce its results:
// the output gradient is (out - onehot) / rows * s(out) * (1 - s(out)), s the sigmoid — the
// sigmoid's derivative taken at its output rather than its input — so saturated wrong outputs keep
// learning. It reports the same loss value as `mse`.
//
//   h_0 = x;  h_{i+1} = dropout(act(layers.i(h_i)))   for the hidden layers
//   out = output_act(layers.last(h_L));  loss(out, labels)
#include <cstdint>
#include <string>
#include <vector>

#include "sparsetrain/models/layers.h"
#include "sparsetrain/models/linear.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/ops/activation.h"

namespace sparsetrain {

enum class MlpLoss { CrossEntropy, Mse, SetMse };
MlpLoss parse_mlp_loss(const std::string& text, const std::string& source);  // "cross_entropy", "mse", "set_mse"
const char* mlp_loss_name(MlpLoss loss);

struct MlpConfig {
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {300, 100};
  int64_t classes = 10;
  Activation activation = Activation::ReLU;         // hidden layers
  Activation output_activation = Activation::None;  // e.g. sigmoid with MSE (the SET paper)
  MlpLoss loss = MlpLoss::CrossEntropy;
  double dropout = 0.0;  // after every hidden activation, in [0, 1)
  // false: kept activations are not scaled by 1 / (1 - dropout) in training; instead, at
  // evaluation, the pre-activation of every layer after the first (bias included) is multiplied by
  // 1 - dropout (the SET reference code).
  bool inverted_dropout = true;
  // false: the backward pass treats dropout as the identity, so a dropped unit still passes its
  // gradient to the layer below (the SET reference code backpropagates without the mask).
  bool dropout_masks_gradient = true;
  // 0: torch.nn.Linear's default initialization; > 0: weights N(0, init_std^2), biases 0 (the SET
  // reference code's randn / 10 is 0.1).
  double init_std = 0.0;

  // Throws an Error naming the first field out of range or the contradiction (cross-entropy
  // applies its own softmax: an output activation with it is refused).
  void validate() const;
};

class Mlp : public Model {
 public:
  explicit Mlp(const MlpConfig& config);

  const MlpConfig& config() const { return config_; }
  // torch.nn.Linear's default: weights and biases uniform in +-1/sqrt(in); see init_std.
  void init_weights(uint64_t seed) override;
  // batch.inputs [rows x inputs], batch.targets [rows] class labels.
  LossResult forward(const Batch& batch, bool training, uint64_t seed, int64_t step) override;
  void backward() override;
  Flops training_flops(int64_t rows, int64_t seq) const override;
  std::string describe() const override;
  void set_precision(Precision precision) override;

  // The last forward's outputs [rows x classes]: logits with cross-entropy, the output
  // activation's values with MSE. Backward leaves them in place.
  const Matrix& outputs() const;

 private:
  MlpConfig config_;
  std::vector<Linear*> layers_;
  // Per layer i: pre_[i] its output before the activation, post_[i] after it, dropped_[i] after
  // dropout with keep_[i] its decisions (hidden layers).
  Matrix input_;
  std::vector<Matrix> pre_, post_, dropped_;
  std::vector<std::vector<uint8_t>> keep_;
  bool dropped_last_ = false;
  Matrix grad_out_, grad_a_, grad_b_;
  bool ready_for_backward_ = false;
};

}  // namespace sparsetrain
