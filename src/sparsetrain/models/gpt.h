#pragma once
// GPT: a decoder-only transformer after GPT-2, with Hugging Face GPT-2 parameter names.
//
//   transformer.wte.weight            [V x C]  token embedding, also the output head (tied)
//   transformer.wpe.weight            [P x C]  position embedding
//   transformer.h.{i}.ln_1.{weight,bias}           [C]
//   transformer.h.{i}.attn.c_attn.{weight,bias}    [3C x C], [3C]   q, k, v projections
//   transformer.h.{i}.attn.c_proj.{weight,bias}    [C x C], [C]
//   transformer.h.{i}.ln_2.{weight,bias}           [C]
//   transformer.h.{i}.mlp.c_fc.{weight,bias}       [4C x C], [4C]
//   transformer.h.{i}.mlp.c_proj.{weight,bias}     [C x 4C], [C]
//   transformer.ln_f.{weight,bias}                 [C]
//
// Linear weights are stored [out x in] (torch.nn.Linear), the transpose of Hugging Face's Conv1D
// layout; every one of them is a sparsifiable Linear. Blocks are pre-LayerNorm:
//   x = x + c_proj(attention(c_attn(ln_1(x))));  x = x + mlp.c_proj(gelu(mlp.c_fc(ln_2(x))))
// and the logits are ln_f(x) wte^T, trained with softmax cross-entropy on the next token.
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "sparsetrain/core/bf16.h"
#include "sparsetrain/models/layers.h"
#include "sparsetrain/models/linear.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/ops/attention.h"

namespace sparsetrain {

// The layer_norm_epsilon a config file may give: above 0 and held by float32, in which the layer
// norms compute (casting a double beyond float's range is undefined; one below it gives 0).
inline constexpr double kLayerNormEpsMin = std::numeric_limits<float>::denorm_min();
inline constexpr double kLayerNormEpsMax = std::numeric_limits<float>::max();

struct GptConfig {
  int64_t vocab_size = 256;      // V
  int64_t context = 128;         // P, the longest sequence (n_positions)
  int64_t layers = 4;            // n_layer
  int64_t heads = 4;             // n_head
  int64_t embed = 128;           // C (n_embd), a multiple of heads
  float layer_norm_eps = 1e-5f;  // read from a double within kLayerNormEpsRange
  double init_std = 0.02;        // N(0, init_std) weights; residual projections / sqrt(2 * layers)

  // Throws an Error naming the first field out of range.
  void validate() const;
};

class Gpt : public Model {
 public:
  explicit Gpt(const GptConfig& config);

  const GptConfig& config() const { return config_; }
  void init_weights(uint64_t seed) override;
  // batch.ids and batch.targets [rows * seq] with 1 <= seq <= context.
  LossResult forward(const Batch& batch, bool training, uint64_t seed, int64_t step) override;
  void backward() override;
  Flops training_flops(int64_t rows, int64_t seq) const override;
  std::string describe() const override;
  void set_precision(Precision precision) override;

  // Logits [rows * seq x V] of token sequences (no loss, nothing kept for backward).
  const Matrix& logits(std::span<const int32_t> ids, int64_t rows, int64_t seq);

 private:
  struct Attention : Module {
    explicit Attention(int64_t c);
    Linear& c_attn;
    Linear& c_proj;
  };
  struct Mlp : Module {
    explicit Mlp(int64_t c);
    Linear& c_fc;
    Linear& c_proj;
  };
  struct Block : Module {
    Block(int64_t c, float eps);
    LayerNorm& ln_1;
    Attention& attn;
    LayerNorm& ln_2;
    Mlp& mlp;
  };
  // What one block's backward pass needs from its forward pass.
  struct BlockActs {
    Matrix ln1, qkv, att, residual_mid, ln2, fc, gelu;  // [BT x C], [BT x 3C], [BT x C], ..., [BT x 4C]
    std::vector<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd, probs;
  };
  void run_forward(std::span<const int32_t> ids, int64_t rows, int64_t seq);
  void resize(int64_t rows, int64_t seq);

  GptConfig config_;
  Embedding* wte_;
  Embedding* wpe_;
  std::vector<Block*> blocks_;
  LayerNorm* ln_f_;

  AttentionShape shape_;
  std::vector<int32_t> ids_, targets_, positions_;
  std::vector<Matrix> residual_;  // input of block l, and of ln_f at l = layers
  std::vector<BlockActs> acts_;
  Matrix lnf_;
  std::vector<float> lnf_mean_, lnf_rstd_;
  Matrix logits_;                                            // then dlogits after a training forward
  Bf16Matrix lnf16_, dlogits16_;                             // the bf16 head's operands
  Matrix scratch_c_, scratch_c2_, scratch_4c_, scratch_3c_;  // projections and backward gradients
  bool ready_for_backward_ = false;
  Precision head_precision_ = Precision::Fp32;
};

}  // namespace sparsetrain
