#include "sparsetrain/models/gpt.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/ops/activation.h"
#include "sparsetrain/ops/elementwise.h"
#include "sparsetrain/ops/embedding.h"
#include "sparsetrain/ops/layer_norm.h"

namespace sparsetrain {

void GptConfig::validate() const {
  auto positive = [](const char* field, int64_t v) {
    if (v < 1) fail("gpt model: '{}' must be >= 1, got {}", field, v);
  };
  positive("vocab_size", vocab_size);
  positive("n_positions", context);
  positive("n_layer", layers);
  positive("n_head", heads);
  positive("n_embd", embed);
  if (embed % heads != 0) fail("gpt model: 'n_embd' ({}) must be a multiple of 'n_head' ({})", embed, heads);
  if (!(layer_norm_eps > 0.0f)) fail("gpt model: 'layer_norm_epsilon' must be > 0, got {}", layer_norm_eps);
  if (!(init_std > 0.0)) fail("gpt model: 'initializer_range' must be > 0, got {}", init_std);
}

Gpt::Attention::Attention(int64_t c)
    : Module("GPT2Attention"),
      c_attn(register_module("c_attn", std::make_unique<Linear>(c, 3 * c))),
      c_proj(register_module("c_proj", std::make_unique<Linear>(c, c))) {}

Gpt::Mlp::Mlp(int64_t c)
    : Module("GPT2MLP"),
      c_fc(register_module("c_fc", std::make_unique<Linear>(c, 4 * c))),
      c_proj(register_module("c_proj", std::make_unique<Linear>(4 * c, c))) {}

Gpt::Block::Block(int64_t c, float eps)
    : Module("GPT2Block"),
      ln_1(register_module("ln_1", std::make_unique<LayerNorm>(c, eps))),
      attn(register_module("attn", std::make_unique<Attention>(c))),
      ln_2(register_module("ln_2", std::make_unique<LayerNorm>(c, eps))),
      mlp(register_module("mlp", std::make_unique<Mlp>(c))) {}

namespace {

struct Transformer : Module {
  Transformer() : Module("GPT2Model") {}
  using Module::register_module;
};

}  // namespace

Gpt::Gpt(const GptConfig& config) : Model("GPT2LMHeadModel"), config_(config) {
  config_.validate();
  const int64_t c = config_.embed;
  auto transformer = std::make_unique<Transformer>();
  wte_ = &transformer->register_module("wte", std::make_unique<Embedding>(config_.vocab_size, c));
  wpe_ = &transformer->register_module("wpe", std::make_unique<Embedding>(config_.context, c));
  auto& h = transformer->register_module("h", std::make_unique<ModuleList>());
  for (int64_t l = 0; l < config_.layers; ++l)
    blocks_.push_back(&h.append(std::make_unique<Block>(c, config_.layer_norm_eps)));
  ln_f_ = &transformer->register_module("ln_f", std::make_unique<LayerNorm>(c, config_.layer_norm_eps));
  register_module("transformer", std::move(transformer));
}

std::string Gpt::describe() const {
  return fmt::format("gpt: {} layers, {} heads, width {}, context {}, vocabulary {}", config_.layers, config_.heads,
                     config_.embed, config_.context, config_.vocab_size);
}

void Gpt::init_weights(uint64_t seed) {
  // GPT-2: N(0, 0.02) weights and embeddings, the projections into the residual stream scaled by
  // 1/sqrt(2 * layers), zero biases, unit LayerNorm gains.
  const double residual_std = config_.init_std / std::sqrt(2.0 * static_cast<double>(config_.layers));
  for (const Entry& e : named_parameters()) {
    Parameter& p = *e.param;
    const std::string& name = p.name();
    auto values = p.values();
    const bool norm = e.owner->type() == "LayerNorm";
    const bool bias = name.ends_with(".bias");
    if (norm && !bias) {
      std::fill(values.begin(), values.end(), 1.0f);
    } else if (bias) {
      std::fill(values.begin(), values.end(), 0.0f);
    } else {
      const double std = name.ends_with("c_proj.weight") ? residual_std : config_.init_std;
      const Philox rng(seed, name);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(std * rng.normal(i));
    }
  }
}

void Gpt::resize(int64_t rows, int64_t seq) {
  if (seq < 1 || seq > config_.context)
    fail("gpt: sequences of {} tokens do not fit the context of {} ('n_positions')", seq, config_.context);
  if (rows < 1) fail("gpt: a batch needs at least one sequence");
  if (!residual_.empty() && shape_.batch == rows && shape_.seq == seq) return;  // buffers fit already
  const int64_t c = config_.embed, bt = rows * seq;
  shape_ = {rows, seq, config_.heads, c};
  shape_.precision = head_precision_;
  residual_.clear();
  residual_.resize(static_cast<std::size_t>(config_.layers + 1));
  for (Matrix& r : residual_) r = Matrix(bt, c);
  acts_.clear();
  acts_.resize(static_cast<std::size_t>(config_.layers));
  const auto n = static_cast<std::size_t>(bt);
  for (BlockActs& a : acts_) {
    a.ln1 = Matrix(bt, c);
    a.qkv = Matrix(bt, 3 * c);
    a.att = Matrix(bt, c);
    a.residual_mid = Matrix(bt, c);
    a.ln2 = Matrix(bt, c);
    a.fc = Matrix(bt, 4 * c);
    a.gelu = Matrix(bt, 4 * c);
    for (auto* v : {&a.ln1_mean, &a.ln1_rstd, &a.ln2_mean, &a.ln2_rstd}) v->assign(n, 0.0f);
    a.probs.assign(static_cast<std::size_t>(shape_.probs_size()), 0.0f);
  }
  lnf_ = Matrix(bt, c);
  lnf_mean_.assign(n, 0.0f);
  lnf_rstd_.assign(n, 0.0f);
  logits_ = Matrix(bt, config_.vocab_size);
  scratch_c_ = Matrix(bt, c);
  scratch_c2_ = Matrix(bt, c);
  scratch_3c_ = Matrix(bt, 3 * c);
  scratch_4c_ = Matrix(bt, 4 * c);
  positions_.resize(n);
  for (int64_t i = 0; i < bt; ++i) positions_[static_cast<std::size_t>(i)] = static_cast<int32_t>(i % seq);
}

// Residual stream of each block: r_mid = r + attn.c_proj(attention(c_attn(ln_1(r)))),
//                                r'    = r_mid + mlp.c_proj(gelu(c_fc(ln_2(r_mid)))).
void Gpt::run_forward(std::span<const int32_t> ids, int64_t rows, int64_t seq) {
  resize(rows, seq);
  if (ids.size() != static_cast<std::size_t>(rows * seq))
    fail("gpt: {} token ids for a batch of {} x {}", ids.size(), rows, seq);
  // x = wte[ids] + wpe[positions]                                          [BT x C]
  embedding_forward(std::as_const(wte_->weight).dense(), ids, residual_[0]);
  embedding_forward(std::as_const(wpe_->weight).dense(), positions_, residual_[0], /*accumulate=*/true);
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    Block& b = *blocks_[l];
    BlockActs& a = acts_[l];
    Matrix& x = residual_[l];
    layer_norm_forward(x, b.ln_1.weight.values().data(), b.ln_1.bias.values().data(), b.ln_1.eps, a.ln1,
                       a.ln1_mean.data(), a.ln1_rstd.data());
    b.attn.c_attn.forward(a.ln1, a.qkv);                      // [BT x 3C]
    attention_forward(shape_, a.qkv, a.att, a.probs.data());  // [BT x C]
    b.attn.c_proj.forward(a.att, scratch_c_);
    add(x, scratch_c_, a.residual_mid);
    layer_norm_forward(a.residual_mid, b.ln_2.weight.values().data(), b.ln_2.bias.values().data(), b.ln_2.eps, a.ln2,
                       a.ln2_mean.data(), a.ln2_rstd.data());
    b.mlp.c_fc.forward(a.ln2, a.fc);                                             // [BT x 4C]
    b.mlp.c_proj.forward_activated(Activation::Gelu, a.fc, a.gelu, scratch_c_);  // c_proj(gelu(fc))
    add(a.residual_mid, scratch_c_, residual_[l + 1]);
  }
  layer_norm_forward(residual_.back(), ln_f_->weight.values().data(), ln_f_->bias.values().data(), ln_f_->eps, lnf_,
                     lnf_mean_.data(), lnf_rstd_.data());
  // logits = ln_f(x) wte^T                                                  [BT x V]
  const ProfileScope profile("head");
  if (head_precision_ == Precision::Bf16) {
    round_to_bf16(lnf_, lnf16_);
    dense_linear_fwd_bf16(lnf16_.view(), {wte_->weight.bf16_values(), config_.vocab_size, config_.embed, config_.embed},
                          nullptr, logits_);
    return;
  }
  dense_linear_fwd(lnf_, wte_->weight.dense(), nullptr, logits_);
}

void Gpt::set_precision(Precision precision) {
  head_precision_ = precision;
  shape_.precision = precision;  // the attention products
  for (Block* b : blocks_)
    for (Linear* lin : {&b->attn.c_attn, &b->attn.c_proj, &b->mlp.c_fc, &b->mlp.c_proj}) lin->set_precision(precision);
}

const Matrix& Gpt::logits(std::span<const int32_t> ids, int64_t rows, int64_t seq) {
  run_forward(ids, rows, seq);
  ready_for_backward_ = false;
  return logits_;
}

LossResult Gpt::forward(const Batch& batch, bool training, uint64_t /*seed*/, int64_t /*step*/) {
  run_forward(batch.ids, batch.rows, batch.seq);
  if (batch.targets.size() != batch.ids.size())
    fail("gpt: {} targets for {} token ids", batch.targets.size(), batch.ids.size());
  // In training, the logits buffer becomes dL/dlogits.
  const LossResult result =
      softmax_cross_entropy(logits_, batch.targets, training ? MatrixView(logits_) : MatrixView{});
  if (training) ids_.assign(batch.ids.begin(), batch.ids.end());
  ready_for_backward_ = training;
  return result;
}

void Gpt::backward() {
  if (!ready_for_backward_) fail("gpt: backward() without a training forward()");
  ready_for_backward_ = false;
  const Matrix& dlogits = logits_;
  Parameter& wte = wte_->weight;
  MatrixView dwte{wte.grad().data(), config_.vocab_size, config_.embed, config_.embed};
  // Head: dlnf = dlogits wte; dwte += dlogits^T lnf                         [BT x C], [V x C]
  Matrix& dlnf = scratch_c_;
  {
    const ProfileScope profile("head");
    if (head_precision_ == Precision::Bf16) {
      round_to_bf16(dlogits, dlogits16_);
      dense_linear_bwd_data_bf16(dlogits16_.view(),
                                 {wte_->weight.bf16_values(), config_.vocab_size, config_.embed, config_.embed}, dlnf);
      dense_linear_bwd_weights_bf16(dlogits16_.view(), lnf16_.view(), dwte, /*accumulate=*/true);
    } else {
      dense_linear_bwd_data(dlogits, wte.dense(), dlnf);
      dense_linear_bwd_weights(dlogits, lnf_, dwte, nullptr, /*accumulate=*/true);
    }
  }
  // dres: the gradient of the residual stream, flowing down through the blocks.
  Matrix& dres = scratch_c2_;
  std::fill(dres.data(), dres.data() + dres.size(), 0.0f);
  layer_norm_backward(dlnf, residual_.back(), ln_f_->weight.values().data(), lnf_mean_.data(), lnf_rstd_.data(), dres,
                      ln_f_->weight.grad().data(), ln_f_->bias.grad().data());
  grads_ready(*ln_f_);
  for (std::size_t l = blocks_.size(); l-- > 0;) {
    Block& b = *blocks_[l];
    BlockActs& a = acts_[l];
    // MLP branch: r' = r_mid + c_proj(gelu(c_fc(ln_2(r_mid))))
    b.mlp.c_proj.backward(dres, scratch_4c_);                                              // dgelu [BT x 4C]
    b.mlp.c_fc.backward_through(Activation::Gelu, a.fc, a.gelu, scratch_4c_, scratch_c_);  // dln2 [BT x C]
    layer_norm_backward(scratch_c_, a.residual_mid, b.ln_2.weight.values().data(), a.ln2_mean.data(), a.ln2_rstd.data(),
                        dres, b.ln_2.weight.grad().data(), b.ln_2.bias.grad().data());
    // Attention branch: r_mid = r + c_proj(attention(c_attn(ln_1(r))))
    b.attn.c_proj.backward(dres, scratch_c_);  // datt [BT x C]
    attention_backward(shape_, scratch_c_, a.qkv, a.probs.data(), scratch_3c_);
    b.attn.c_attn.backward(scratch_3c_, scratch_c_);  // dln1 [BT x C]
    layer_norm_backward(scratch_c_, residual_[l], b.ln_1.weight.values().data(), a.ln1_mean.data(), a.ln1_rstd.data(),
                        dres, b.ln_1.weight.grad().data(), b.ln_1.bias.grad().data());
    grads_ready(b);
  }
  embedding_backward(dres, ids_, dwte);
  Parameter& wpe = wpe_->weight;
  embedding_backward(dres, positions_, MatrixView{wpe.grad().data(), config_.context, config_.embed, config_.embed});
}

Flops Gpt::training_flops(int64_t rows, int64_t seq) const {
  // Forward multiply-adds, tripled for training (forward, backward-data, backward-weights).
  const double bt = static_cast<double>(rows * seq), c = static_cast<double>(config_.embed);
  double dense = 0.0, actual = 0.0;
  for (const Block* b : blocks_)
    for (const Linear* lin : {&b->attn.c_attn, &b->attn.c_proj, &b->mlp.c_fc, &b->mlp.c_proj}) {
      dense += static_cast<double>(lin->dense_macs(rows * seq));
      actual += static_cast<double>(lin->actual_macs(rows * seq));
    }
  // q k^T and att v over the causal triangle (what the attention op computes), per layer; the tied head.
  const double causal_pairs = static_cast<double>(rows) * static_cast<double>(seq) * static_cast<double>(seq + 1) / 2.0;
  const double attention = 2.0 * causal_pairs * c * static_cast<double>(config_.layers);
  const double head = bt * c * static_cast<double>(config_.vocab_size);
  return {6.0 * (dense + attention + head), 6.0 * (actual + attention + head)};
}

}  // namespace sparsetrain
