// End-to-end golden test: a tiny GPT and MLP, dense and sparse, whose outputs, loss and every
// parameter gradient must match fixtures computed by an independent float64 PyTorch reference
// (make_fixtures.py next to this file describes the models and the fixture layout). The
// parameters go in through load_state_dict, sparse ones in the format each fixture names, and
// every fixture runs under every ISA path this machine has, so each sparse kernel
// implementation is checked inside a whole model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "isa_testing.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/models/bert.h"
#include "sparsetrain/models/gpt.h"
#include "sparsetrain/models/mlp.h"

namespace sparsetrain {
namespace {

// Float32 against float64, element by element against the tensor's largest value:
//   |got - want| <= kTolerance * max|want|
// Rounding stays below 1e-6 of that scale here (two transformer blocks, dot products of at most
// 48 terms; 8e-7 is the largest seen on every ISA path), while one weight off by 0.1%, or GELU's
// erf form in place of the tanh approximation, moves some output or gradient by more than 1e-5
// of it. The scale is per tensor, not per element: some gradients are exactly zero in exact
// arithmetic (the key bias: softmax ignores a shift shared by a query's scores) and are rounding
// noise on both sides.
constexpr double kTolerance = 1e-5;
// Below this, a float64 reference gradient is zero up to its own rounding.
constexpr float kZeroGradient = 1e-12f;

const char* const kFixtures[] = {"gpt_dense", "gpt_sparse", "bert_dense", "bert_sparse", "mlp_relu_ce", "mlp_set_mse"};

struct Fixture {
  SafetensorsFile file;

  const StateTensor& tensor(const std::string& name) const {
    const StateTensor* t = file.tensors.find(name);
    if (!t) fail("golden fixture: no tensor '{}'", name);
    return *t;
  }
  const std::string& meta(const std::string& key) const {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end()) fail("golden fixture: no metadata '{}'", key);
    return it->second;
  }
  int64_t meta_int(const std::string& key) const { return std::stoll(meta(key)); }
  // Parameters and masks: everything but the batch, the expected results and the gradients.
  StateDict model_state() const {
    StateDict state;
    for (const StateTensor& t : file.tensors.tensors)
      if (!t.name.starts_with("inputs.") && !t.name.starts_with("expected.") && !t.name.starts_with("grad."))
        state.add(t);
    return state;
  }
};

Fixture load_fixture(const std::string& name) {
  return {read_safetensors(std::string(SPARSETRAIN_GOLDEN_DIR) + "/" + name + ".safetensors")};
}

std::unique_ptr<Model> build_gpt(const Fixture& f) {
  GptConfig c;
  c.vocab_size = f.meta_int("vocab_size");
  c.context = f.meta_int("n_positions");
  c.layers = f.meta_int("n_layer");
  c.heads = f.meta_int("n_head");
  c.embed = f.meta_int("n_embd");
  c.layer_norm_eps = std::stof(f.meta("layer_norm_epsilon"));
  return std::make_unique<Gpt>(c);
}

std::unique_ptr<Model> build_bert(const Fixture& f) {
  BertConfig c;
  c.vocab_size = f.meta_int("vocab_size");
  c.hidden = f.meta_int("hidden_size");
  c.layers = f.meta_int("num_hidden_layers");
  c.heads = f.meta_int("num_attention_heads");
  c.intermediate = f.meta_int("intermediate_size");
  c.max_positions = f.meta_int("max_position_embeddings");
  c.type_vocab_size = f.meta_int("type_vocab_size");
  c.layer_norm_eps = std::stof(f.meta("layer_norm_eps"));
  return std::make_unique<Bert>(c);
}

std::unique_ptr<Model> build_mlp(const Fixture& f) {
  MlpConfig c;
  c.inputs = f.meta_int("input_size");
  c.classes = f.meta_int("num_classes");
  c.hidden.clear();
  std::istringstream widths(f.meta("hidden_sizes"));  // "7,5"
  for (std::string w; std::getline(widths, w, ',');) c.hidden.push_back(std::stoll(w));
  c.activation = parse_activation(f.meta("activation"), "golden fixture");
  c.output_activation = parse_activation(f.meta("output_activation"), "golden fixture");
  c.loss = parse_mlp_loss(f.meta("loss"), "golden fixture");
  return std::make_unique<Mlp>(c);
}

// Each parameter named by a `format.<name>` entry is made sparse in that format under the
// fixture's mask, before loading: load_state_dict takes masks only into sparse parameters.
void sparsify(Model& model, const Fixture& f) {
  for (const auto& [key, format] : f.file.metadata) {
    if (!key.starts_with("format.")) continue;
    Parameter& p = model.parameter(key.substr(7));
    const StateTensor& keep = f.tensor(p.name() + "_mask");
    Mask mask(p.rows(), p.cols());
    std::copy(keep.keep.begin(), keep.keep.end(), mask.data());
    p.sparsify(mask, format == "masked_dense" ? std::nullopt : std::optional(FormatSpec::parse(format, key)));
  }
}

std::unique_ptr<Model> build_model(const Fixture& f) {
  const std::string& name = f.meta("name");
  std::unique_ptr<Model> model = name == "gpt" ? build_gpt(f) : name == "bert" ? build_bert(f) : build_mlp(f);
  sparsify(*model, f);
  model->load_state_dict(f.model_state());
  return model;
}

// Token ids and labels are stored as F32 (exact for integers below 2^24).
std::vector<int32_t> as_ints(const StateTensor& t) {
  std::vector<int32_t> out(t.values.size());
  std::transform(t.values.begin(), t.values.end(), out.begin(), [](float v) { return static_cast<int32_t>(v); });
  return out;
}

Batch make_batch(const Fixture& f) {
  Batch b;
  b.targets = as_ints(f.tensor("inputs.targets"));
  if (f.meta("name") != "mlp") {
    const StateTensor& ids = f.tensor("inputs.ids");
    b.rows = ids.shape.at(0);
    b.seq = ids.shape.at(1);
    b.ids = as_ints(ids);
  }
  if (f.meta("name") == "bert") {
    b.token_types = as_ints(f.tensor("inputs.token_types"));
    b.lengths = as_ints(f.tensor("inputs.lengths"));
    b.nsp_labels = as_ints(f.tensor("inputs.nsp_labels"));
  } else if (f.meta("name") == "mlp") {
    const StateTensor& x = f.tensor("inputs.features");
    b.rows = x.shape.at(0);
    b.inputs = Matrix(b.rows, x.shape.at(1));
    std::copy(x.values.begin(), x.values.end(), b.inputs.data());
  }
  return b;
}

struct Result {
  LossResult loss;
  std::vector<float> outputs;
};

// One training forward and backward from zeroed gradients, and the outputs they saw.
Result train_pass(Model& model, const Batch& batch) {
  for (Parameter* p : model.parameters()) p->zero_grad();
  std::vector<float> outputs;
  if (auto* gpt = dynamic_cast<Gpt*>(&model)) {
    // A training forward overwrites the logits with their gradient: read them first.
    const Matrix& logits = gpt->logits(batch.ids, batch.rows, batch.seq);
    outputs.assign(logits.data(), logits.data() + logits.size());
  }
  if (auto* bert = dynamic_cast<Bert*>(&model)) {
    const Matrix& logits = (bert->forward(batch, /*training=*/false, 0, 0), bert->mlm_logits());
    outputs.assign(logits.data(), logits.data() + logits.size());
  }
  const LossResult loss = model.forward(batch, /*training=*/true, /*seed=*/0, /*step=*/0);
  if (const auto* mlp = dynamic_cast<const Mlp*>(&model))
    outputs.assign(mlp->outputs().data(), mlp->outputs().data() + mlp->outputs().size());
  model.backward();
  return {loss, std::move(outputs)};
}

// The gradient as [rows x cols] with zeros at pruned positions. A compressed gradient is laid
// out like values(), so the format's own to_dense() places it: swap it in, expand, swap back.
Matrix dense_grad(Parameter& p) {
  if (p.storage() == Storage::MaskedDense) p.mask_grad();  // the dense dW also covers pruned slots
  if (p.storage() != Storage::Compressed) {
    Matrix g(p.rows(), p.cols());
    std::copy(p.grad().begin(), p.grad().end(), g.data());
    return g;
  }
  std::swap_ranges(p.values().begin(), p.values().end(), p.grad().begin());
  Matrix g = p.to_dense();
  std::swap_ranges(p.values().begin(), p.values().end(), p.grad().begin());
  return g;
}

void expect_close(std::span<const float> got, const StateTensor& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.values.size()) << what;
  float scale = 0.0f;
  for (float w : want.values) scale = std::max(scale, std::fabs(w));
  ASSERT_GT(scale, 0.0f) << what << ": an all-zero reference checks nothing";
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want.values[i]), kTolerance * scale)
        << what << "[" << i << "]: got " << got[i] << ", want " << want.values[i] << " (largest " << scale << ")";
}

// A sparse parameter holds exactly the fixture's mask, and neither value nor gradient at its
// pruned positions.
void expect_pruned(Parameter& p, const StateTensor& keep) {
  const Mask mask = p.mask();
  ASSERT_TRUE(std::equal(keep.keep.begin(), keep.keep.end(), mask.data())) << p.name() << ": mask";
  const Matrix values = p.to_dense();
  const Matrix grad = dense_grad(p);
  for (int64_t i = 0; i < values.size(); ++i) {
    if (mask.data()[i]) continue;
    ASSERT_EQ(values.data()[i], 0.0f) << p.name() << "[" << i << "] is pruned";
    ASSERT_EQ(grad.data()[i], 0.0f) << p.name() << ".grad[" << i << "] is pruned";
  }
  // Compressed, pruned weights are not stored at all (no fixture shape leaves partial blocks).
  if (p.storage() == Storage::Compressed) {
    EXPECT_EQ(p.values().size(), static_cast<std::size_t>(mask.nnz())) << p.name();
  }
}

// Rows whose largest output is the target, first index on ties (LossResult::correct).
int64_t correct_of(const StateTensor& outputs, std::span<const int32_t> targets) {
  const int64_t classes = outputs.shape.back();
  int64_t correct = 0;
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const auto row = outputs.values.begin() + static_cast<std::ptrdiff_t>(r) * classes;
    correct += std::max_element(row, row + classes) - row == targets[r];
  }
  return correct;
}

void check_against_fixture(Model& model, const Batch& batch, const Fixture& f) {
  const Result r = train_pass(model, batch);
  const double want_loss = f.tensor("expected.loss").values.at(0);
  EXPECT_LE(std::fabs(r.loss.loss - want_loss), kTolerance * std::fabs(want_loss))
      << "loss " << r.loss.loss << ", want " << want_loss;
  std::vector<int32_t> predicted = batch.targets;  // a BERT's outputs: the masked positions' rows
  std::erase(predicted, kIgnoreTarget);
  EXPECT_EQ(r.loss.correct, correct_of(f.tensor("expected.outputs"), predicted));
  expect_close(r.outputs, f.tensor("expected.outputs"), "outputs");
  for (Parameter* p : model.parameters()) {
    const std::string grad_name = "grad." + p->name();
    const Matrix g = dense_grad(*p);
    const StateTensor& want = f.tensor(grad_name);
    if (std::all_of(want.values.begin(), want.values.end(), [](float w) { return std::fabs(w) < kZeroGradient; })) {
      // A gradient that is zero in exact arithmetic: BERT's key bias adds one constant to all of a
      // query's scores, which the softmax cancels. Float32 leaves rounding noise, nothing more.
      for (int64_t i = 0; i < g.size(); ++i) ASSERT_LE(std::fabs(g.data()[i]), 1e-6f) << grad_name << "[" << i << "]";
    } else {
      expect_close({g.data(), static_cast<std::size_t>(g.size())}, want, grad_name);
    }
    if (p->is_sparse()) expect_pruned(*p, f.tensor(p->name() + "_mask"));
  }
}

class Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Golden, OutputsLossAndEveryGradientMatchTheReference) {
  const Fixture f = load_fixture(GetParam());
  const std::unique_ptr<Model> model = build_model(f);
  const Batch batch = make_batch(f);
  for (CpuIsa isa : testing_isa::usable_isas()) {
    SCOPED_TRACE(std::string("ISA cap ") + std::string(isa_name(isa)));
    const testing_isa::IsaCap cap(isa);
    check_against_fixture(*model, batch, f);
    if (HasFailure()) break;
  }
}

TEST_P(Golden, FixtureSetsEveryParameterAndItsGradient) {
  const Fixture f = load_fixture(GetParam());
  const std::unique_ptr<Model> model = build_model(f);
  int64_t grads = 0;
  for (const StateTensor& t : f.file.tensors.tensors) grads += t.name.starts_with("grad.");
  EXPECT_EQ(grads, static_cast<int64_t>(model->parameters().size()));
  for (const auto& [key, format] : f.file.metadata) {
    if (!key.starts_with("format.")) continue;
    const Storage want = format == "masked_dense" ? Storage::MaskedDense : Storage::Compressed;
    EXPECT_EQ(model->parameter(key.substr(7)).storage(), want) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<const char*>& param) { return std::string(param.param); });

}  // namespace
}  // namespace sparsetrain
