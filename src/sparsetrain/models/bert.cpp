#include "sparsetrain/models/bert.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/ops/dropout.h"
#include "sparsetrain/ops/elementwise.h"
#include "sparsetrain/ops/embedding.h"
#include "sparsetrain/ops/layer_norm.h"

namespace sparsetrain {

void BertConfig::validate() const {
  auto positive = [](const char* field, int64_t v) {
    if (v < 1) fail("bert model: '{}' must be >= 1, got {}", field, v);
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden);
  positive("num_hidden_layers", layers);
  positive("num_attention_heads", heads);
  positive("intermediate_size", intermediate);
  positive("max_position_embeddings", max_positions);
  positive("type_vocab_size", type_vocab_size);
  if (hidden % heads != 0)
    fail("bert model: 'hidden_size' ({}) must be a multiple of 'num_attention_heads' ({})", hidden, heads);
  if (!(hidden_dropout >= 0.0f && hidden_dropout < 1.0f))
    fail("bert model: 'hidden_dropout_prob' must be in [0, 1), got {}", hidden_dropout);
  if (!(attention_dropout >= 0.0f && attention_dropout < 1.0f))
    fail("bert model: 'attention_probs_dropout_prob' must be in [0, 1), got {}", attention_dropout);
  if (!(layer_norm_eps > 0.0f)) fail("bert model: 'layer_norm_eps' must be > 0, got {}", layer_norm_eps);
  if (!(init_std > 0.0)) fail("bert model: 'initializer_range' must be > 0, got {}", init_std);
  if (predictions_per_row < 1) fail("bert model: predictions per row must be >= 1, got {}", predictions_per_row);
}

namespace {

// A module whose only job is to name its children (BertModel, BertEncoder, cls, ...).
struct Named : Module {
  explicit Named(std::string type) : Module(std::move(type)) {}
  using Module::register_module;
  using Module::register_parameter;
};

// rows[i] of `from` -> row i of `to` (the MLM head's masked positions; the [CLS] rows).
void gather_rows(ConstMatrixView from, const std::vector<int32_t>& rows, MatrixView to) {
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy_n(from.row(rows[i]), from.cols, to.row(static_cast<int64_t>(i)));
}

// Row i of `from` added to rows[i] of `to`, in order (rows are distinct).
void scatter_add_rows(ConstMatrixView from, const std::vector<int32_t>& rows, MatrixView to) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const float* src = from.row(static_cast<int64_t>(i));
    float* dst = to.row(rows[i]);
    for (int64_t c = 0; c < from.cols; ++c) dst[c] += src[c];
  }
}

void zero(MatrixView m) {
  for (int64_t r = 0; r < m.rows; ++r) std::fill_n(m.row(r), m.cols, 0.0f);
}

// Columns [part * C, (part + 1) * C) of a [BT x 3C] matrix.
MatrixView third(Matrix& m, int64_t part) {
  const int64_t c = m.cols() / 3;
  return {m.data() + part * c, m.rows(), c, m.cols()};
}

}  // namespace

Bert::Embeddings::Embeddings(const BertConfig& c)
    : Module("BertEmbeddings"),
      word_embeddings(register_module("word_embeddings", std::make_unique<Embedding>(c.vocab_size, c.hidden))),
      position_embeddings(
          register_module("position_embeddings", std::make_unique<Embedding>(c.max_positions, c.hidden))),
      token_type_embeddings(
          register_module("token_type_embeddings", std::make_unique<Embedding>(c.type_vocab_size, c.hidden))),
      norm(register_module("LayerNorm", std::make_unique<LayerNorm>(c.hidden, c.layer_norm_eps))) {}

Bert::SelfAttention::SelfAttention(int64_t c)
    : Module("BertSelfAttention"),
      query(register_module("query", std::make_unique<Linear>(c, c))),
      key(register_module("key", std::make_unique<Linear>(c, c))),
      value(register_module("value", std::make_unique<Linear>(c, c))) {}

Bert::DenseNorm::DenseNorm(const char* type, int64_t in, int64_t out, float eps)
    : Module(type),
      dense(register_module("dense", std::make_unique<Linear>(in, out))),
      norm(register_module("LayerNorm", std::make_unique<LayerNorm>(out, eps))) {}

Bert::Attention::Attention(int64_t c, float eps)
    : Module("BertAttention"),
      self(register_module("self", std::make_unique<SelfAttention>(c))),
      output(register_module("output", std::make_unique<DenseNorm>("BertSelfOutput", c, c, eps))) {}

Bert::Intermediate::Intermediate(int64_t c, int64_t i)
    : Module("BertIntermediate"), dense(register_module("dense", std::make_unique<Linear>(c, i))) {}

Bert::Layer::Layer(const BertConfig& c)
    : Module("BertLayer"),
      attention(register_module("attention", std::make_unique<Attention>(c.hidden, c.layer_norm_eps))),
      intermediate(register_module("intermediate", std::make_unique<Intermediate>(c.hidden, c.intermediate))),
      output(register_module("output",
                             std::make_unique<DenseNorm>("BertOutput", c.intermediate, c.hidden, c.layer_norm_eps))) {}

Bert::Bert(const BertConfig& config)
    : Model(config.next_sentence ? "BertForPreTraining" : "BertForMaskedLM"), config_(config) {
  config_.validate();
  const int64_t c = config_.hidden;
  auto bert = std::make_unique<Named>("BertModel");
  embeddings_ = &bert->register_module("embeddings", std::make_unique<Embeddings>(config_));
  auto& encoder = bert->register_module("encoder", std::make_unique<Named>("BertEncoder"));
  auto& list = encoder.register_module("layer", std::make_unique<ModuleList>());
  for (int64_t l = 0; l < config_.layers; ++l) layers_.push_back(&list.append(std::make_unique<Layer>(config_)));
  if (config_.next_sentence) {
    auto& pooler = bert->register_module("pooler", std::make_unique<Named>("BertPooler"));
    pooler_ = &pooler.register_module("dense", std::make_unique<Linear>(c, c));
  }
  register_module("bert", std::move(bert));

  auto cls = std::make_unique<Named>(config_.next_sentence ? "BertPreTrainingHeads" : "BertOnlyMLMHead");
  auto& predictions = cls->register_module("predictions", std::make_unique<Named>("BertLMPredictionHead"));
  auto& transform = predictions.register_module("transform", std::make_unique<Named>("BertPredictionHeadTransform"));
  transform_ = &transform.register_module("dense", std::make_unique<Linear>(c, c));
  transform_norm_ = &transform.register_module("LayerNorm", std::make_unique<LayerNorm>(c, config_.layer_norm_eps));
  decoder_bias_ = &predictions.register_parameter("bias", {config_.vocab_size});
  if (config_.next_sentence)
    seq_relationship_ = &cls->register_module("seq_relationship", std::make_unique<Linear>(c, 2));
  heads_ = &register_module("cls", std::move(cls));
}

std::string Bert::describe() const {
  return fmt::format("bert: {} layers, {} heads, width {}, intermediate {}, positions {}, vocabulary {}, {}",
                     config_.layers, config_.heads, config_.hidden, config_.intermediate, config_.max_positions,
                     config_.vocab_size, config_.next_sentence ? "masked LM + next sentence" : "masked LM");
}

void Bert::init_weights(uint64_t seed) {
  // Hugging Face's BertPreTrainedModel._init_weights: N(0, initializer_range) for linear weights
  // and embeddings, zero biases, unit LayerNorm gains.
  for (const Entry& e : named_parameters()) {
    Parameter& p = *e.param;
    auto values = p.values();
    const bool norm = e.owner->type() == "LayerNorm";
    const bool bias = p.name().ends_with("bias");
    if (norm && !bias) {
      std::fill(values.begin(), values.end(), 1.0f);
    } else if (bias) {
      std::fill(values.begin(), values.end(), 0.0f);
    } else {
      const Philox rng(seed, p.name());
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(config_.init_std * rng.normal(i));
    }
  }
}

std::array<Linear*, 6> Bert::encoder_linears(std::size_t l) const {
  Layer& y = *layers_[l];
  return {&y.attention.self.query,   &y.attention.self.key, &y.attention.self.value,
          &y.attention.output.dense, &y.intermediate.dense, &y.output.dense};
}

void Bert::set_precision(Precision precision) {
  head_precision_ = precision;
  shape_.precision = precision;  // the attention products
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (Linear* lin : encoder_linears(l)) lin->set_precision(precision);
  transform_->set_precision(precision);
}

void Bert::check_batch(const Batch& b) const {
  if (b.seq < 1 || b.seq > config_.max_positions)
    fail("bert: sequences of {} tokens do not fit the {} positions ('max_position_embeddings')", b.seq,
         config_.max_positions);
  if (b.rows < 1) fail("bert: a batch needs at least one sequence");
  const auto n = static_cast<std::size_t>(b.rows * b.seq);
  if (b.ids.size() != n || b.targets.size() != n || b.token_types.size() != n)
    fail("bert: a batch of {} x {} needs {} token ids, targets and token types; got {}, {} and {}", b.rows, b.seq, n,
         b.ids.size(), b.targets.size(), b.token_types.size());
  if (b.lengths.size() != static_cast<std::size_t>(b.rows))
    fail("bert: {} sequence lengths for {} rows", b.lengths.size(), b.rows);
  if (config_.next_sentence && b.nsp_labels.size() != static_cast<std::size_t>(b.rows))
    fail("bert: the next-sentence task needs one label per row; got {} for {} rows", b.nsp_labels.size(), b.rows);
  for (std::size_t i = 0; i < n; ++i)
    if (b.token_types[i] < 0 || b.token_types[i] >= config_.type_vocab_size)
      fail("bert: token type {} at position {} is outside [0, {}) ('type_vocab_size')", b.token_types[i], i,
           config_.type_vocab_size);
}

void Bert::resize(int64_t rows, int64_t seq) {
  if (!hidden_.empty() && shape_.batch == rows && shape_.seq == seq) return;  // buffers fit already
  const int64_t c = config_.hidden, inter = config_.intermediate, bt = rows * seq;
  const auto n = static_cast<std::size_t>(bt);
  shape_ = {rows, seq, config_.heads, c};
  shape_.precision = head_precision_;
  shape_.causal = false;
  emb_sum_ = Matrix(bt, c);
  emb_mean_.assign(n, 0.0f);
  emb_rstd_.assign(n, 0.0f);
  hidden_.clear();
  hidden_.resize(static_cast<std::size_t>(config_.layers + 1));
  for (Matrix& h : hidden_) h = Matrix(bt, c);
  acts_.clear();
  acts_.resize(static_cast<std::size_t>(config_.layers));
  for (LayerActs& a : acts_) {
    a.qkv = Matrix(bt, 3 * c);
    a.att = Matrix(bt, c);
    a.sum1 = Matrix(bt, c);
    a.h1 = Matrix(bt, c);
    a.inter = Matrix(bt, inter);
    a.act = Matrix(bt, inter);
    a.sum2 = Matrix(bt, c);
    for (auto* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd}) v->assign(n, 0.0f);
    a.probs.assign(static_cast<std::size_t>(shape_.probs_size()), 0.0f);
  }
  for (Matrix* m : {&dres_, &g_a_, &g_b_, &g_c_}) *m = Matrix(bt, c);
  g_i_ = Matrix(bt, inter);
  g_3c_ = Matrix(bt, 3 * c);
  for (Matrix* m : {&cls_, &pooled_pre_, &pooled_, &dpooled_, &dcls_}) *m = Matrix(rows, c);
  nsp_logits_ = Matrix(rows, 2);
  positions_.resize(n);
  for (int64_t i = 0; i < bt; ++i) positions_[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % seq);
}

// Hidden dropout of a training forward on m in place, its keep mask into `keep`; nothing when off.
void Bert::drop_hidden(const Philox& rng, int64_t first_token, MatrixView m, std::vector<uint8_t>& keep) const {
  if (dropout_ == 0.0f) return;
  keep.resize(static_cast<std::size_t>(m.rows * m.cols));
  dropout_forward(dropout_, rng, m, m, keep.data(), /*inverted=*/true, first_token);
}

// The gradient before a drop_hidden: dy through its mask into `out` (which may be dy); dy itself
// when dropout is off.
ConstMatrixView Bert::undrop_hidden(const std::vector<uint8_t>& keep, ConstMatrixView dy, MatrixView out) const {
  if (dropout_ == 0.0f) return dy;
  dropout_backward(dropout_, keep.data(), dy, out);
  return out;
}

// One post-LayerNorm encoder layer, hidden_[l] -> hidden_[l + 1]:
//   sum1 = x + drop(attention.output.dense(attention(query(x), key(x), value(x))));  h1 = LN(sum1)
//   sum2 = h1 + drop(output.dense(act(intermediate.dense(h1))));                      x' = LN(sum2)
void Bert::forward_layer(std::size_t l, uint64_t seed, int64_t step, int64_t first_token) {
  Layer& y = *layers_[l];
  LayerActs& a = acts_[l];
  const Matrix& x = hidden_[l];
  // q, k, v side by side in qkv [BT x 3C], the layout the attention op reads, each written in
  // place through a strided view; key and value read the input query packed.
  y.attention.self.query.forward(x, third(a.qkv, 0));
  y.attention.self.key.forward_same_input(y.attention.self.query, x, third(a.qkv, 1));
  y.attention.self.value.forward_same_input(y.attention.self.query, x, third(a.qkv, 2));
  shape_.rng = &attention_rngs_[l];
  attention_forward(shape_, a.qkv, a.att, a.probs.data());  // [BT x C]
  y.attention.output.dense.forward(a.att, g_a_);
  drop_hidden(Philox(seed, fmt::format("bert.dropout.{}.attention", l), static_cast<uint64_t>(step)), first_token, g_a_,
              a.keep1);
  add(x, g_a_, a.sum1);
  LayerNorm& n1 = y.attention.output.norm;
  layer_norm_forward(a.sum1, n1.weight.values().data(), n1.bias.values().data(), n1.eps, a.h1, a.ln1_mean.data(),
                     a.ln1_rstd.data());
  y.intermediate.dense.forward(a.h1, a.inter);                          // [BT x I]
  y.output.dense.forward_activated(config_.act, a.inter, a.act, g_a_);  // output.dense(act(inter))
  drop_hidden(Philox(seed, fmt::format("bert.dropout.{}.output", l), static_cast<uint64_t>(step)), first_token, g_a_,
              a.keep2);
  add(a.h1, g_a_, a.sum2);
  LayerNorm& n2 = y.output.norm;
  layer_norm_forward(a.sum2, n2.weight.values().data(), n2.bias.values().data(), n2.eps, hidden_[l + 1],
                     a.ln2_mean.data(), a.ln2_rstd.data());
}

LossResult Bert::forward(const Batch& batch, bool training, uint64_t seed, int64_t step) {
  check_batch(batch);
  resize(batch.rows, batch.seq);
  lengths_.assign(batch.lengths.begin(), batch.lengths.end());
  shape_.lengths = lengths_.data();
  ids_.assign(batch.ids.begin(), batch.ids.end());
  token_types_.assign(batch.token_types.begin(), batch.token_types.end());
  dropout_ = training ? config_.hidden_dropout : 0.0f;
  const int64_t first_token = batch.first_row * batch.seq;  // where this rank's tokens start in the step's batch
  shape_.dropout = training ? config_.attention_dropout : 0.0f;
  shape_.first_row = batch.first_row;
  attention_rngs_.clear();
  for (std::size_t l = 0; l < layers_.size(); ++l)
    attention_rngs_.emplace_back(seed, fmt::format("bert.dropout.{}.probs", l), static_cast<uint64_t>(step));

  // x = LN(word[ids] + position[t] + token_type[types]), then dropout      [BT x C]
  Embeddings& e = *embeddings_;
  embedding_forward(std::as_const(e.word_embeddings.weight).dense(), ids_, emb_sum_);
  embedding_forward(std::as_const(e.position_embeddings.weight).dense(), positions_, emb_sum_, /*accumulate=*/true);
  embedding_forward(std::as_const(e.token_type_embeddings.weight).dense(), token_types_, emb_sum_, /*accumulate=*/true);
  layer_norm_forward(emb_sum_, e.norm.weight.values().data(), e.norm.bias.values().data(), e.norm.eps, hidden_[0],
                     emb_mean_.data(), emb_rstd_.data());
  drop_hidden(Philox(seed, "bert.dropout.embeddings", static_cast<uint64_t>(step)), first_token, hidden_[0], emb_keep_);
  for (std::size_t l = 0; l < layers_.size(); ++l) forward_layer(l, seed, step, first_token);
  const LossResult result = forward_heads(batch, training);
  ready_for_backward_ = training;
  return result;
}

// MLM: logits [M x V] = LN(act(transform(x_L[masked]))) word^T + bias, cross-entropy on the
// masked tokens. NSP: seq_relationship(tanh(pooler(x_L[cls]))) [B x 2], cross-entropy on the rows.
LossResult Bert::forward_heads(const Batch& batch, bool training) {
  const ProfileScope profile("head");
  const int64_t c = config_.hidden;
  masked_rows_.clear();
  masked_targets_.clear();
  for (std::size_t i = 0; i < batch.targets.size(); ++i)
    if (batch.targets[i] != kIgnoreTarget) {
      masked_rows_.push_back(static_cast<int32_t>(i));
      masked_targets_.push_back(batch.targets[i]);
    }
  const auto m = static_cast<int64_t>(masked_rows_.size());
  if (m == 0) fail("bert: a batch of {} rows masks no token; masked language modelling needs at least one", batch.rows);
  for (Matrix* h : {&head_in_, &head_pre_, &head_act_, &head_norm_, &dhead_, &dhead_in_}) h->reshape(m, c);
  logits_.reshape(m, config_.vocab_size);
  head_mean_.resize(static_cast<std::size_t>(m));
  head_rstd_.resize(static_cast<std::size_t>(m));

  const Matrix& out = hidden_.back();
  gather_rows(out, masked_rows_, head_in_);
  transform_->forward(head_in_, head_pre_);
  activation_forward(config_.act, head_pre_.data(), head_act_.data(), head_act_.size());
  layer_norm_forward(head_act_, transform_norm_->weight.values().data(), transform_norm_->bias.values().data(),
                     transform_norm_->eps, head_norm_, head_mean_.data(), head_rstd_.data());
  const float* bias = decoder_bias_->values().data();
  Parameter& word = embeddings_->word_embeddings.weight;
  if (head_precision_ == Precision::Bf16) {
    round_to_bf16(head_norm_, head_norm16_);
    dense_linear_fwd_bf16(head_norm16_.view(), {word.bf16_values(), config_.vocab_size, config_.hidden, config_.hidden},
                          bias, logits_);
  } else {
    dense_linear_fwd(head_norm_, std::as_const(word).dense(), bias, logits_);
  }
  // In training, the logits buffers become their gradients.
  LossResult result = softmax_cross_entropy(logits_, masked_targets_, training ? MatrixView(logits_) : MatrixView{});
  if (!config_.next_sentence) return result;

  nsp_labels_.assign(batch.nsp_labels.begin(), batch.nsp_labels.end());
  cls_rows_.resize(static_cast<std::size_t>(batch.rows));
  for (int64_t b = 0; b < batch.rows; ++b) cls_rows_[static_cast<std::size_t>(b)] = static_cast<int32_t>(b * batch.seq);
  gather_rows(out, cls_rows_, cls_);
  pooler_->forward(cls_, pooled_pre_);
  activation_forward(Activation::Tanh, pooled_pre_.data(), pooled_.data(), pooled_.size());
  seq_relationship_->forward(pooled_, nsp_logits_);
  const LossResult nsp =
      softmax_cross_entropy(nsp_logits_, nsp_labels_, training ? MatrixView(nsp_logits_) : MatrixView{});
  result.loss += nsp.loss;
  result.nsp_loss = nsp.loss;
  result.nsp_correct = nsp.correct;
  return result;
}

// From the heads' gradients (logits_, nsp_logits_) to dres_ = dL/dx_L, announcing cls and pooler.
void Bert::backward_heads() {
  const ProfileScope profile("head");
  zero(dres_);
  Parameter& word = embeddings_->word_embeddings.weight;
  MatrixView dword{word.grad().data(), config_.vocab_size, config_.hidden, config_.hidden};
  // dhead = dlogits word; dword += dlogits^T head_norm; dbias += colsum(dlogits)     [M x C], [V x C]
  if (head_precision_ == Precision::Bf16) {
    round_to_bf16(logits_, dlogits16_, decoder_bias_->grad().data(), /*accumulate=*/true);
    dense_linear_bwd_data_bf16(dlogits16_.view(),
                               {word.bf16_values(), config_.vocab_size, config_.hidden, config_.hidden}, dhead_);
    dense_linear_bwd_weights_bf16(dlogits16_.view(), head_norm16_.view(), dword, /*accumulate=*/true);
  } else {
    dense_linear_bwd_data(logits_, word.dense(), dhead_);
    dense_linear_bwd_weights(logits_, head_norm_, dword, decoder_bias_->grad().data(), /*accumulate=*/true);
  }
  layer_norm_backward(dhead_, head_act_, transform_norm_->weight.values().data(), head_mean_.data(), head_rstd_.data(),
                      dhead_in_, transform_norm_->weight.grad().data(), transform_norm_->bias.grad().data(),
                      /*accumulate_dx=*/false);
  activation_backward(config_.act, head_pre_.data(), head_act_.data(), dhead_in_.data(), dhead_in_.data(),
                      dhead_in_.size());
  transform_->backward(dhead_in_, dhead_);
  scatter_add_rows(dhead_, masked_rows_, dres_);
  if (config_.next_sentence) {
    if (nsp_weight_ != 1.0f)
      for (int64_t i = 0; i < nsp_logits_.size(); ++i) nsp_logits_.data()[i] *= nsp_weight_;
    seq_relationship_->backward(nsp_logits_, dpooled_);
    activation_backward(Activation::Tanh, pooled_pre_.data(), pooled_.data(), dpooled_.data(), dpooled_.data(),
                        dpooled_.size());
    pooler_->backward(dpooled_, dcls_);
    scatter_add_rows(dcls_, cls_rows_, dres_);
    grads_ready(*pooler_);
  }
  grads_ready(*heads_);
}

void Bert::backward_layer(std::size_t l) {
  Layer& y = *layers_[l];
  LayerActs& a = acts_[l];
  // x' = LN(sum2): g_a = dsum2, which is dh1's first part and d(dropped output).
  LayerNorm& n2 = y.output.norm;
  layer_norm_backward(dres_, a.sum2, n2.weight.values().data(), a.ln2_mean.data(), a.ln2_rstd.data(), g_a_,
                      n2.weight.grad().data(), n2.bias.grad().data(), /*accumulate_dx=*/false);
  y.output.dense.backward(undrop_hidden(a.keep2, g_a_, g_b_), g_i_);               // dact [BT x I]
  y.intermediate.dense.backward_through(config_.act, a.inter, a.act, g_i_, g_c_);  // [BT x C]
  add_into(g_c_, g_a_);                                                            // g_a = dh1
  // h1 = LN(sum1): dres = dsum1 (dsum2 is spent), which is dx's first part and d(dropped
  // attention output).
  LayerNorm& n1 = y.attention.output.norm;
  layer_norm_backward(g_a_, a.sum1, n1.weight.values().data(), a.ln1_mean.data(), a.ln1_rstd.data(), dres_,
                      n1.weight.grad().data(), n1.bias.grad().data(), /*accumulate_dx=*/false);
  y.attention.output.dense.backward(undrop_hidden(a.keep1, dres_, g_b_), g_c_);  // datt [BT x C]
  shape_.rng = &attention_rngs_[l];
  attention_backward(shape_, g_c_, a.qkv, a.probs.data(), g_3c_);
  // dx = dsum1 + the three projections' input gradients, added in that order.
  Linear* qkv_layers[] = {&y.attention.self.query, &y.attention.self.key, &y.attention.self.value};
  for (int64_t part = 0; part < 3; ++part) {
    qkv_layers[part]->backward(third(g_3c_, part), g_c_);
    add_into(g_c_, dres_);
  }
  grads_ready(y);
}

void Bert::backward() {
  if (!ready_for_backward_) fail("bert: backward() without a training forward()");
  ready_for_backward_ = false;
  backward_heads();
  for (std::size_t l = layers_.size(); l-- > 0;) backward_layer(l);
  // Embeddings: dropout, LayerNorm, then the three lookups.
  Embeddings& e = *embeddings_;
  undrop_hidden(emb_keep_, dres_, dres_);
  layer_norm_backward(dres_, emb_sum_, e.norm.weight.values().data(), emb_mean_.data(), emb_rstd_.data(), g_a_,
                      e.norm.weight.grad().data(), e.norm.bias.grad().data(), /*accumulate_dx=*/false);
  const int64_t c = config_.hidden;
  embedding_backward(g_a_, ids_, MatrixView{e.word_embeddings.weight.grad().data(), config_.vocab_size, c, c});
  embedding_backward(g_a_, positions_,
                     MatrixView{e.position_embeddings.weight.grad().data(), config_.max_positions, c, c});
  embedding_backward(g_a_, token_types_,
                     MatrixView{e.token_type_embeddings.weight.grad().data(), config_.type_vocab_size, c, c});
}

Flops Bert::training_flops(int64_t rows, int64_t seq) const {
  // Forward multiply-adds, tripled for training (forward, backward-data, backward-weights).
  const int64_t bt = rows * seq, masked = rows * std::min(seq, config_.predictions_per_row);
  double dense = 0.0, actual = 0.0;
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (const Linear* lin : encoder_linears(l)) {
      dense += static_cast<double>(lin->dense_macs(bt));
      actual += static_cast<double>(lin->actual_macs(bt));
    }
  auto head = [&](const Linear* lin, int64_t tokens) {
    if (lin == nullptr) return;
    dense += static_cast<double>(lin->dense_macs(tokens));
    actual += static_cast<double>(lin->actual_macs(tokens));
  };
  head(transform_, masked);
  head(pooler_, rows);
  head(seq_relationship_, rows);
  // q k^T and att v over every (query, key) pair of each layer; the tied decoder on the masked tokens.
  const double c = static_cast<double>(config_.hidden);
  const double attention = 2.0 * static_cast<double>(rows) * static_cast<double>(seq) * static_cast<double>(seq) * c *
                           static_cast<double>(config_.layers);
  const double decoder = static_cast<double>(masked) * c * static_cast<double>(config_.vocab_size);
  return {6.0 * (dense + attention + decoder), 6.0 * (actual + attention + decoder)};
}

}  // namespace sparsetrain
