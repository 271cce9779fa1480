#pragma once
// BERT: a bidirectional transformer encoder pre-trained by masked language modelling (and, when
// on, next-sentence prediction), with Hugging Face BertForPreTraining parameter names.
//
//   bert.embeddings.word_embeddings.weight         [V x C]  also the MLM decoder (tied)
//   bert.embeddings.position_embeddings.weight     [P x C]
//   bert.embeddings.token_type_embeddings.weight   [S x C]  segments A and B
//   bert.embeddings.LayerNorm.{weight,bias}        [C]
//   bert.encoder.layer.{i}.attention.self.{query,key,value}.{weight,bias}   [C x C], [C]
//   bert.encoder.layer.{i}.attention.output.dense.{weight,bias}             [C x C], [C]
//   bert.encoder.layer.{i}.attention.output.LayerNorm.{weight,bias}         [C]
//   bert.encoder.layer.{i}.intermediate.dense.{weight,bias}                 [I x C], [I]
//   bert.encoder.layer.{i}.output.dense.{weight,bias}                       [C x I], [C]
//   bert.encoder.layer.{i}.output.LayerNorm.{weight,bias}                   [C]
//   bert.pooler.dense.{weight,bias}                [C x C], [C]      next-sentence task only
//   cls.predictions.transform.dense.{weight,bias}  [C x C], [C]
//   cls.predictions.transform.LayerNorm.{weight,bias}  [C]
//   cls.predictions.bias                           [V]     the decoder's bias
//   cls.seq_relationship.{weight,bias}             [2 x C], [2]      next-sentence task only
//
// Linear weights are [out x in] (torch.nn.Linear). Layers are post-LayerNorm:
//   h = LN(x + attention.output.dense(attention(q, k, v)));  x' = LN(h + output.dense(act(intermediate.dense(h))))
// with bidirectional attention over each row's real tokens (Batch::lengths; padding gets no
// attention). The MLM head runs on the masked positions only (gathered first):
//   logits = LN(act(transform.dense(x_L[masked]))) word_embeddings^T + cls.predictions.bias
// and the next-sentence head on each row's first token ([CLS]):
//   nsp = seq_relationship(tanh(pooler.dense(x_L[cls])))
// The loss is the mean cross-entropy over masked tokens plus, when on, the mean over rows of the
// next-sentence cross-entropy (BertForPreTraining's total_loss).
#include <array>
#include <cstdint>
#include <vector>

#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/models/layers.h"
#include "sparsetrain/models/linear.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/ops/activation.h"
#include "sparsetrain/ops/attention.h"

namespace sparsetrain {

struct BertConfig {
  int64_t vocab_size = 256;              // V
  int64_t hidden = 128;                  // C, hidden_size, a multiple of heads
  int64_t layers = 4;                    // num_hidden_layers
  int64_t heads = 4;                     // num_attention_heads
  int64_t intermediate = 512;            // I, intermediate_size
  int64_t max_positions = 128;           // P, max_position_embeddings
  int64_t type_vocab_size = 2;           // S
  Activation act = Activation::GeluErf;  // hidden_act: HF "gelu" is the erf form
  float hidden_dropout = 0.0f;           // hidden_dropout_prob: embeddings, attention output, FFN output
  float attention_dropout = 0.0f;        // attention_probs_dropout_prob: on the attention probabilities
  float layer_norm_eps = 1e-12f;         // layer_norm_eps
  double init_std = 0.02;                // initializer_range
  bool next_sentence = true;             // NSP head (off: disable_nsp, BertForMaskedLM's modules)
  // Masked tokens per row the FLOP count assumes (the data's min(max_predictions_per_seq,
  // round(masked_lm_prob * seq))); the passes handle whatever the batch masks.
  int64_t predictions_per_row = 20;

  // Throws an Error naming the first field out of range.
  void validate() const;
};

class Bert : public Model {
 public:
  explicit Bert(const BertConfig& config);

  const BertConfig& config() const { return config_; }
  void init_weights(uint64_t seed) override;
  // batch.ids, token_types, targets [rows * seq] (kIgnoreTarget where nothing is predicted),
  // lengths [rows], nsp_labels [rows] when the next-sentence task is on; 1 <= seq <= P.
  // LossResult::correct counts masked tokens, nsp_* the next-sentence rows.
  LossResult forward(const Batch& batch, bool training, uint64_t seed, int64_t step) override;
  void backward() override;
  Flops training_flops(int64_t rows, int64_t seq) const override;
  std::string describe() const override;
  void set_precision(Precision precision) override;
  void set_row_mean_weight(double factor) override { nsp_weight_ = static_cast<float>(factor); }

  // The MLM logits [masked x V] of the last evaluation forward, one row per masked position in
  // batch order (a training forward turns them into their gradient).
  const Matrix& mlm_logits() const { return logits_; }

 private:
  struct Embeddings : Module {
    explicit Embeddings(const BertConfig& c);
    Embedding& word_embeddings;
    Embedding& position_embeddings;
    Embedding& token_type_embeddings;
    LayerNorm& norm;
  };
  struct SelfAttention : Module {
    explicit SelfAttention(int64_t c);
    Linear& query;
    Linear& key;
    Linear& value;
  };
  struct DenseNorm : Module {  // attention.output and output: a dense layer and a LayerNorm
    DenseNorm(const char* type, int64_t in, int64_t out, float eps);
    Linear& dense;
    LayerNorm& norm;
  };
  struct Attention : Module {
    Attention(int64_t c, float eps);
    SelfAttention& self;
    DenseNorm& output;
  };
  struct Intermediate : Module {
    Intermediate(int64_t c, int64_t i);
    Linear& dense;
  };
  struct Layer : Module {
    explicit Layer(const BertConfig& c);
    Attention& attention;
    Intermediate& intermediate;
    DenseNorm& output;
  };
  // What one layer's backward pass needs from its forward pass.
  struct LayerActs {
    Matrix qkv, att, sum1, h1, inter, act, sum2;  // [BT x 3C], [BT x C] x 3, [BT x I] x 2, [BT x C]
    std::vector<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd, probs;
    std::vector<uint8_t> keep1, keep2;  // hidden dropout after attention.output.dense and output.dense
  };
  void resize(int64_t rows, int64_t seq);
  void check_batch(const Batch& batch) const;
  void drop_hidden(const Philox& rng, int64_t first_token, MatrixView m, std::vector<uint8_t>& keep) const;
  ConstMatrixView undrop_hidden(const std::vector<uint8_t>& keep, ConstMatrixView dy, MatrixView out) const;
  void forward_layer(std::size_t l, uint64_t seed, int64_t step, int64_t first_token);
  void backward_layer(std::size_t l);  // dres_: the gradient of layer l's output in, of its input out
  LossResult forward_heads(const Batch& batch, bool training);
  void backward_heads();  // into dres_
  // The six encoder linears of layer l: query, key, value, attention output, intermediate, output.
  std::array<Linear*, 6> encoder_linears(std::size_t l) const;

  BertConfig config_;
  Embeddings* embeddings_;
  std::vector<Layer*> layers_;
  Linear* pooler_ = nullptr;
  Linear* transform_;
  LayerNorm* transform_norm_;
  Parameter* decoder_bias_;
  Linear* seq_relationship_ = nullptr;
  Module* heads_;  // cls: both heads, whose gradients are final before the encoder's

  AttentionShape shape_;
  std::vector<int32_t> ids_, positions_, token_types_, lengths_;
  Matrix emb_sum_, x0_;  // embeddings before and after their LayerNorm
  std::vector<float> emb_mean_, emb_rstd_;
  std::vector<uint8_t> emb_keep_;
  std::vector<Matrix> hidden_;  // input of layer l, and the encoder's output at l = layers
  std::vector<LayerActs> acts_;
  // MLM head on the M masked positions: rows of the batch, gathered input, transform, logits.
  std::vector<int32_t> masked_rows_, masked_targets_;
  Matrix head_in_, head_pre_, head_act_, head_norm_, logits_;  // [M x C] x 4, [M x V]
  Bf16Matrix head_norm16_, dlogits16_;                         // the bf16 decoder's operands
  std::vector<float> head_mean_, head_rstd_;
  // Next-sentence head: [CLS] rows, pooled, logits.
  Matrix cls_, pooled_pre_, pooled_, nsp_logits_;  // [B x C] x 3, [B x 2]
  std::vector<int32_t> nsp_labels_, cls_rows_;
  Matrix dres_, g_a_, g_b_, g_c_, g_i_, g_3c_;              // backward: [BT x C] x 4, [BT x I], [BT x 3C]
  Matrix dhead_, dhead_in_, dpooled_, dcls_;                // [M x C] x 2, [B x C] x 2
  float dropout_ = 0.0f;  // the hidden dropout of the last forward (0 outside training)
  std::vector<Philox> attention_rngs_;  // per layer: the attention dropout's stream of the last forward
  bool ready_for_backward_ = false;
  Precision head_precision_ = Precision::Fp32;
  float nsp_weight_ = 1.0f;  // set_row_mean_weight
};

}  // namespace sparsetrain
