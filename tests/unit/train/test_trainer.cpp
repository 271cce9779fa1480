// The trainer end to end on a small text file: a run stopped and resumed from its checkpoint is
// bit-identical to an uninterrupted one for every algorithm and storage; directories and configs
// that cannot be trained are refused with clear messages.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <variant>

#include "error_of.h"
#include "scoped_setting.h"
#include "sparsetrain/core/build_info.h"
#include "sparsetrain/core/cpu_model.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/data/fashion_mnist.h"
#include "sparsetrain/data/numpy_shuffle.h"
#include "sparsetrain/io/nan_form.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/kernels/kernel_list.h"
#include "sparsetrain/train/checkpoint.h"
#include "sparsetrain/train/run_environment.h"
#include "sparsetrain/train/step.h"
#include "sparsetrain/train/trainer.h"
#include "trainer_test.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using testing::error_of;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct AlgorithmCase {
  const char* name;
  const char* sparsity;
  bool bf16 = false;
};

// The config in bf16 mixed precision (the Model Zoo's keys).
std::string in_bf16(std::string yaml) {
  const std::string model_end = "n_embd: 16}";
  const std::size_t at = yaml.find(model_end);
  EXPECT_NE(at, std::string::npos);
  return yaml.replace(at, model_end.size(), "n_embd: 16, mixed_precision: true, fp16_type: bfloat16}");
}

class ResumeTest : public TrainerTest, public ::testing::WithParamInterface<AlgorithmCase> {};

TEST_P(ResumeTest, StoppedAndResumedRunIsBitIdentical) {
  const std::string sparsity = GetParam().sparsity;
  auto cfg = [&](int64_t steps) {
    return GetParam().bf16 ? in_bf16(config(sparsity, steps)) : config(sparsity, steps);
  };
  const fs::path whole = root_ / "whole", parts = root_ / "parts";
  ASSERT_EQ(train(cfg(10), whole), 0);
  ASSERT_EQ(train(cfg(6), parts), 0);   // stops at 6 (checkpoints 4 and 6)
  ASSERT_EQ(train(cfg(10), parts), 0);  // resumes from 6
  EXPECT_EQ(bytes(checkpoint_model_path(whole.string(), 10)), bytes(checkpoint_model_path(parts.string(), 10)));
  EXPECT_EQ(bytes(checkpoint_state_path(whole.string(), 10)), bytes(checkpoint_state_path(parts.string(), 10)));
  // Only the newest two complete checkpoints are kept.
  EXPECT_EQ(complete_checkpoints(parts.string()), (std::vector<int64_t>{8, 10}));
  // The metrics read as one run: train rows at steps 3, 6, 9, 10, each once.
  std::ifstream in(parts / "metrics.jsonl");
  std::string line;
  std::vector<int64_t> steps;
  while (std::getline(in, line)) {
    const auto row = nlohmann::json::parse(line);
    if (row["split"] == "train") steps.push_back(row["step"].get<int64_t>());
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 6, 9, 10}));
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ResumeTest,
    ::testing::Values(
        AlgorithmCase{"dense", ""},
        AlgorithmCase{"static_csr", "sparsity: {algorithm: static, sparsity: 0.8, format: csr}"},
        AlgorithmCase{
            "gmp_bcsr4",
            "sparsity: {algorithm: gmp, sparsity: {type: polynomial, init: 0.0, final: 0.75, begin: 0, end: 8}, "
            "update: {freq: 2}, format: bcsr4}"},
        AlgorithmCase{"set_masked", "sparsity: {algorithm: set, sparsity: 0.7, update: {freq: 2}, drop_fraction: 0.3}"},
        AlgorithmCase{"rigl_csr",
                      "sparsity: {algorithm: rigl, sparsity: 0.9, update: {freq: 2, stop: 9}, format: csr, "
                      "distribution: erk}"},
        AlgorithmCase{"rigl_2_4", "sparsity: {algorithm: rigl, sparsity: 0.5, update: {freq: 3}, format: \"2:4\"}"},
        AlgorithmCase{"set_bcsr8", "sparsity: {algorithm: set, sparsity: 0.6, update: {freq: 2}, format: bcsr8}"},
        // attn.c_proj (16x16) is one 16x16 block: at any level it would keep none (an error).
        AlgorithmCase{"rigl_bcsr16",
                      "sparsity: {algorithm: rigl, sparsity: 0.5, update: {freq: 3}, format: bcsr16, param_filter: "
                      "[\"*attn.c_attn.weight\", \"*mlp.c_*.weight\"]}"},
        AlgorithmCase{"static_1_4", "sparsity: {algorithm: static, sparsity: 0.75, format: \"1:4\"}"},
        // bf16 mixed precision: dense (oneDNN's bf16 products) and the bf16 sparse kernels.
        AlgorithmCase{"dense_bf16", "", true},
        AlgorithmCase{"rigl_csr_bf16",
                      "sparsity: {algorithm: rigl, sparsity: 0.9, update: {freq: 2, stop: 9}, format: csr, "
                      "distribution: erk}",
                      true},
        AlgorithmCase{"set_bcsr4_bf16", "sparsity: {algorithm: set, sparsity: 0.6, update: {freq: 2}, format: bcsr4}",
                      true},
        AlgorithmCase{"rigl_2_4_bf16", "sparsity: {algorithm: rigl, sparsity: 0.5, update: {freq: 3}, format: \"2:4\"}",
                      true},
        AlgorithmCase{"set_masked_bf16",
                      "sparsity: {algorithm: set, sparsity: 0.7, update: {freq: 2}, drop_fraction: 0.3}", true}),
    [](const ::testing::TestParamInfo<AlgorithmCase>& case_info) { return std::string(case_info.param.name); });

// Dense fine-tuning from a sparse checkpoint (SPDF): the dense run starts at step 0 from the
// sparse weights, zeros included, with its own optimizer; a sparse run started from a dense
// checkpoint keeps its own masks; rerunning the command resumes the new run.
TEST_F(TrainerTest, WeightsOnlyStartsANewRunFromAnotherRunsWeights) {
  const fs::path sparse_dir = root_ / "sparse", dense_dir = root_ / "dense", tuned = root_ / "tuned";
  const std::string sparse = config("sparsity: {algorithm: static, sparsity: 0.8, format: csr}", 4);
  ASSERT_EQ(train(sparse, sparse_dir), 0);
  const std::string from = checkpoint_model_path(sparse_dir.string(), 4);
  const SafetensorsFile file = read_safetensors(from);

  sparsetrain::Setup dense = make_setup(load_train_config_yaml(config("", 2), "test.yaml"), 3, false);
  load_model_weights(from, *dense.model);
  int64_t zeros = 0;
  for (Parameter* p : dense.model->parameters()) {
    EXPECT_FALSE(p->is_sparse()) << p->name();
    const Matrix got = p->to_dense();
    const StateTensor* want = file.tensors.find(p->name());
    ASSERT_NE(want, nullptr) << p->name();
    for (int64_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got.data()[i], want->values[static_cast<std::size_t>(i)]) << p->name() << " " << i;
      zeros += got.data()[i] == 0.0f ? 1 : 0;
    }
  }
  EXPECT_GT(zeros, 1000) << "the pruned positions come over as zeros";

  // A sparse run from a dense checkpoint: this run's masks, the file's values where they keep.
  ASSERT_EQ(train(config("", 4), dense_dir), 0);
  const std::string dense_from = checkpoint_model_path(dense_dir.string(), 4);
  sparsetrain::Setup target = make_setup(load_train_config_yaml(sparse, "test.yaml"), 5, false);
  std::vector<Mask> masks;
  for (Parameter* p : target.model->parameters())
    if (p->is_sparse()) masks.push_back(p->mask());
  load_model_weights(dense_from, *target.model);
  const SafetensorsFile dense_file = read_safetensors(dense_from);
  std::size_t m = 0;
  for (Parameter* p : target.model->parameters()) {
    if (!p->is_sparse()) continue;
    EXPECT_TRUE(p->mask() == masks[m++]) << p->name();
    const Matrix got = p->to_dense();
    const Mask mask = p->mask();
    const StateTensor* want = dense_file.tensors.find(p->name());
    for (int64_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got.data()[i], mask.data()[i] ? want->values[static_cast<std::size_t>(i)] : 0.0f) << p->name();
  }

  // Through the trainer: a new run at step 0 (params.yaml written), resumed by the same command.
  const auto fine_tune = [&](int64_t steps) {
    sparsetrain::Setup s = make_setup(load_train_config_yaml(config("", steps), "test.yaml"), 3, true);
    RunOptions o;
    o.model_dir = tuned.string();
    o.checkpoint_path = from;
    o.weights_only = true;
    o.progress = false;
    return run(s, o);
  };
  ASSERT_EQ(fine_tune(4), 0);
  EXPECT_TRUE(fs::exists(tuned / "params.yaml"));
  EXPECT_EQ(read_checkpoint_state(checkpoint_model_path(tuned.string(), 4)).trainer.progress.step, 4);
  ::testing::internal::CaptureStdout();
  const int again = fine_tune(6);
  const std::string said = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(again, 0);
  EXPECT_EQ(complete_checkpoints(tuned.string()), (std::vector<int64_t>{4, 6}));
  EXPECT_THAT(said, HasSubstr("--checkpoint_path " + from + " is not read: " + tuned.string() +
                              " has a run of its own, which goes on"));

  // Another shape: the file and the tensor are named.
  sparsetrain::Setup wide = make_setup(
      load_train_config_yaml(std::regex_replace(config("", 2), std::regex("n_embd: 16"), "n_embd: 32"), "test.yaml"), 3,
      false);
  EXPECT_THAT(error_of([&] { load_model_weights(from, *wide.model); }),
              AllOf(HasSubstr(from + ": does not fit this model"), HasSubstr("has shape")));
}

TEST_F(TrainerTest, EvaluatesACheckpointAndGeneratesMetrics) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir, RunMode::TrainAndEval), 0);
  ASSERT_EQ(train(config("", 4), dir, RunMode::Eval), 0);
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  int evals = 0;
  while (std::getline(in, line)) {
    const auto row = nlohmann::json::parse(line);
    if (row["split"] != "eval") continue;
    ++evals;
    EXPECT_EQ(row["step"], 4) << "evaluation reports the checkpoint's step";
    EXPECT_GT(row["perplexity"].get<double>(), 1.0);
    EXPECT_LT(row["perplexity"].get<double>(), 258.0 * 2);
  }
  EXPECT_EQ(evals, 2);
  EXPECT_TRUE(fs::exists(dir / "params.yaml"));
}

TEST_F(TrainerTest, LossFallsOnLearnableText) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("sparsity: {algorithm: static, sparsity: 0.5, format: csr}", 40), dir), 0);
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  std::vector<double> losses;
  while (std::getline(in, line)) losses.push_back(nlohmann::json::parse(line)["loss"].get<double>());
  ASSERT_GE(losses.size(), 3u);
  EXPECT_LT(losses.back(), losses.front() - 1.0);  // from ~ln(257) = 5.5 towards the text's entropy
}

// train_input.tokenizer: wordpiece encodes the text with BERT's uncased vocabulary, and the model
// takes its size; the first loss of a fresh model is about ln(30522).
TEST_F(TrainerTest, TrainsWithTheWordPieceTokenizer) {
  std::string yaml = config("", 2);
  const auto set_tokenizer = [&](const std::string& name) {
    std::string out = yaml;
    for (std::size_t at = out.find("tokenizer: byte"); at != std::string::npos; at = out.find("tokenizer: byte", at))
      out.replace(at, 15, "tokenizer: " + name);
    return out;
  };
  sparsetrain::Setup s = make_setup(load_train_config_yaml(set_tokenizer("wordpiece"), "test.yaml"), 3, true);
  EXPECT_EQ(s.tokenizer->name(), "wordpiece");
  EXPECT_EQ(s.model->parameter("transformer.wte.weight").shape(), (Shape{30522, 16}));
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(set_tokenizer("wordpiece"), dir), 0);
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NEAR(nlohmann::json::parse(line)["loss"].get<double>(), std::log(30522.0), 0.5);
  EXPECT_THAT(error_of([&] { load_train_config_yaml(set_tokenizer("bert"), "test.yaml"); }),
              ::testing::HasSubstr("train_input.tokenizer: expected byte, gpt2 or wordpiece"));
}

// The step's gradient norm is the float64 norm of every gradient, for any thread count (the
// wider model's token embedding and MLP weights span several of the norm's parallel chunks), and
// clipping scales the gradients to the limit.
TEST_F(TrainerTest, GradientNormIsTheFloat64NormAndClippingReachesTheLimit) {
  auto yaml = [&](double max_norm) {
    return fmt::format(R"(model: {{name: gpt, n_positions: 16, n_layer: 1, n_head: 2, n_embd: 160}}
train_input: {{data: text_file, path: "{}", tokenizer: byte, batch_size: 4}}
optimizer: {{optimizer_type: adamw, learning_rate: 0.001, max_gradient_norm: {}}}
runconfig: {{max_steps: 1, seed: 3}}
)",
                       (root_ / "corpus.txt").string(), max_norm);
  };
  auto norm_of_grads = [](Model& model) {
    double sum = 0.0;
    for (const Parameter* p : model.parameters())
      for (float g : p->grad()) sum += static_cast<double>(g) * g;
    return std::sqrt(sum);
  };
  auto step = [&](double max_norm, int threads) {
    const testing::ThreadCount guard(threads);
    sparsetrain::Setup s = make_setup(load_train_config_yaml(yaml(max_norm), "test.yaml"), 3, true);
    Batch batch;
    const StepResult r = train_step(s, 1, batch);
    return std::pair{r.grad_norm, norm_of_grads(*s.model)};
  };
  const auto [norm1, after1] = step(1.0e9, 1);
  const auto [norm2, after2] = step(1.0e9, 2);
  ASSERT_GT(norm1, 0.0);
  EXPECT_NEAR(norm1, after1, 1e-12 * after1) << "no clipping: the reported norm is the gradients' norm";
  EXPECT_EQ(norm1, norm2) << "the norm does not depend on the thread count";
  EXPECT_EQ(after1, after2);
  const double limit = norm1 / 4.0;
  const auto [clipped_norm, clipped_after] = step(limit, 2);
  EXPECT_EQ(clipped_norm, norm1) << "the reported norm is the one before clipping";
  EXPECT_NEAR(clipped_after, limit, 1e-6 * limit);
}

// The last train row of a run's metrics.
nlohmann::json last_train_row(const fs::path& dir) {
  std::ifstream in(dir / "metrics.jsonl");
  nlohmann::json last;
  for (std::string line; std::getline(in, line);) {
    const auto row = nlohmann::json::parse(line);
    if (row["split"] == "train") last = row;
  }
  return last;
}

// A learning rate of 1e30 overflows the logits at step 2. Skip: every later step is counted, the
// run goes to its end and fails there (most of it was skipped). Stop: exit code 4 with a checkpoint of step 1, the last
// state whose step was finite.
TEST_F(TrainerTest, NonFiniteStepsAreSkippedOrStopTheRun) {
  std::string yaml = config("sparsity: {algorithm: set, sparsity: 0.7, update: {freq: 1}, format: csr}", 6);
  yaml.replace(yaml.find("learning_rate: 0.003, max_gradient_norm: 1.0"), 44, "learning_rate: 1.0e+30");
  ASSERT_NE(yaml.find("1.0e+30"), std::string::npos);

  // Skipped steps 2..6, more than half of the run: it did not train, and says so with exit code 4.
  const fs::path skipped = root_ / "skip";
  ::testing::internal::CaptureStdout();
  const int code = train(yaml, skipped);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, kExitNonFinite);
  EXPECT_THAT(out, HasSubstr("5 of the run's 6 steps were skipped for a non-finite loss or gradient "
                             "(runconfig.nonfinite_policy: skip), more than half: the run did not train"));
  const nlohmann::json row = last_train_row(skipped);
  EXPECT_EQ(row["step"], 6);
  EXPECT_EQ(row["skipped"], 5);  // steps 2..6
  EXPECT_TRUE(row["loss"].is_null());
  EXPECT_EQ(complete_checkpoints(skipped.string()), (std::vector<int64_t>{4, 6}));

  std::string stopping = yaml;
  stopping.replace(stopping.find("seed: 3}"), 8, "seed: 3, nonfinite_policy: stop}");
  const fs::path stopped = root_ / "stop";
  EXPECT_EQ(train(stopping, stopped), kExitNonFinite);
  EXPECT_EQ(complete_checkpoints(stopped.string()), std::vector<int64_t>{1});
  // Step 1 of both runs was the same finite step: the stop checkpoint holds its result.
  TrainConfig c = load_train_config_yaml(stopping, "stop.yaml");
  sparsetrain::Setup fresh = make_setup(std::move(c), 3, true);
  const std::optional<TrainerState> state =
      load_checkpoint(checkpoint_model_path(stopped.string(), 1), *fresh.model, fresh.optimizer.get());
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->progress.step, 1);
  for (const Parameter* p : fresh.model->parameters())
    for (float v : p->values()) ASSERT_TRUE(std::isfinite(v)) << p->name();
}

// With a learning rate too small to move the loss, each step's loss is the running mean plus
// batch-to-batch noise, so with a factor barely above 1 about half the steps after the 10-step
// warm-up are spikes: skipped, counted, and the same ones in a resumed run.
TEST_F(TrainerTest, LossSpikesAreSkippedAndResumedAlike) {
  auto yaml = [&](int64_t steps) {
    std::string text = config("", steps, ", loss_spike_factor: 1.0001");
    text.replace(text.find("learning_rate: 0.003"), 20, "learning_rate: 1.0e-9");
    return text;
  };
  const fs::path whole = root_ / "whole", parts = root_ / "parts";
  ASSERT_EQ(train(yaml(20), whole), 0);
  ASSERT_EQ(train(yaml(12), parts), 0);
  ASSERT_EQ(train(yaml(20), parts), 0);
  const nlohmann::json row = last_train_row(whole);
  EXPECT_GE(row["loss_spikes"].get<int64_t>(), 2);
  EXPECT_LE(row["loss_spikes"].get<int64_t>(), 10);  // none in the warm-up
  EXPECT_EQ(row["loss_spikes"], last_train_row(parts)["loss_spikes"]);
  EXPECT_EQ(bytes(checkpoint_model_path(whole.string(), 20)), bytes(checkpoint_model_path(parts.string(), 20)));
  EXPECT_EQ(bytes(checkpoint_state_path(whole.string(), 20)), bytes(checkpoint_state_path(parts.string(), 20)));
}

// A directory whose run died before its first checkpoint holds nothing to resume: the run starts
// afresh, keeping the dead attempt's files beside it under names of their own, and says so.
TEST_F(TrainerTest, StartsAfreshOverARunThatDiedBeforeItsFirstCheckpoint) {
  const fs::path dir = root_ / "run";
  fs::create_directories(dir);
  std::ofstream(dir / "metrics.jsonl") << "{\"step\":1}\n";
  std::ofstream(dir / "params.yaml") << "# the dead attempt\n";
  std::ofstream(dir / "run_environment.jsonl") << "{\"step\":0,\"threads\":7}\n";
  std::ofstream(dir / "metrics.interrupted-1.jsonl") << "{\"step\":2}\n";  // an earlier dead attempt
  fs::create_directories(dir / "train");
  std::ofstream(dir / "train" / "events.out.tfevents.1.host.1.0") << "its events";
  ::testing::internal::CaptureStdout();
  const int code = train(config("", 4), dir);
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr(dir.string() +
                             ": the run there stopped before its first checkpoint; starting afresh (its files are "
                             "kept as metrics.interrupted-2.jsonl, params.interrupted-2.yaml, "
                             "run_environment.interrupted-2.jsonl, train.interrupted-2)"));
  EXPECT_EQ(bytes(dir / "train.interrupted-2" / "events.out.tfevents.1.host.1.0"), "its events");
  EXPECT_EQ(bytes(dir / "metrics.interrupted-1.jsonl"), "{\"step\":2}\n");
  EXPECT_EQ(bytes(dir / "metrics.interrupted-2.jsonl"), "{\"step\":1}\n");
  EXPECT_EQ(bytes(dir / "params.interrupted-2.yaml"), "# the dead attempt\n");
  EXPECT_EQ(bytes(dir / "run_environment.interrupted-2.jsonl"), "{\"step\":0,\"threads\":7}\n");
  EXPECT_EQ(nlohmann::json::parse(bytes(dir / "run_environment.jsonl"))["step"], 0);
  EXPECT_EQ(bytes(dir / "params.yaml"), config("", 4));
  EXPECT_EQ(last_train_row(dir)["step"], 4);
  EXPECT_EQ(complete_checkpoints(dir.string()), std::vector<int64_t>{4});
}

TEST_F(TrainerTest, IgnoresAnIncompleteCheckpoint) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir), 0);
  // A later checkpoint whose marker never got written (a crash during save) is not resumed from.
  fs::copy_file(checkpoint_model_path(dir.string(), 4), checkpoint_model_path(dir.string(), 8));
  EXPECT_EQ(complete_checkpoints(dir.string()), (std::vector<int64_t>{4}));
  // A truncated model file makes its marker's size check fail.
  fs::resize_file(checkpoint_model_path(dir.string(), 4), 100);
  EXPECT_TRUE(complete_checkpoints(dir.string()).empty());
}

// What a killed save can leave: temporary files, a step's files without its marker, a marker
// whose sizes do not match. Training again ignores them for resume and removes them, saying so;
// complete checkpoints and files that are not the trainer's stay.
TEST_F(TrainerTest, StartRemovesWhatAnInterruptedSaveLeft) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir), 0);
  const std::string d = dir.string();
  fs::copy_file(checkpoint_model_path(d, 4), checkpoint_model_path(d, 8));  // no state, no marker
  fs::copy_file(checkpoint_model_path(d, 4), checkpoint_model_path(d, 6));
  fs::copy_file(checkpoint_state_path(d, 4), checkpoint_state_path(d, 6));
  std::ofstream(dir / "checkpoint_6.done") << R"({"step":6,"model_bytes":1,"state_bytes":2})"
                                           << "\n";
  std::ofstream(dir / "checkpoint_7.state.safetensors.tmp-99999") << "partial";
  std::ofstream(dir / "metrics.jsonl.tmp-12") << "partial";
  std::ofstream(dir / "notes.txt") << "mine";
  std::ofstream(dir / "checkpoint_4.safetensors.bak") << "mine too";
  ASSERT_EQ(complete_checkpoints(d), std::vector<int64_t>{4});

  ::testing::internal::CaptureStdout();
  const int code = train(config("", 5), dir);
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr("removed the leftovers of an interrupted save from " + d + ": "));
  for (const char* file :
       {"checkpoint_8.safetensors", "checkpoint_6.done", "checkpoint_6.safetensors", "checkpoint_6.state.safetensors",
        "checkpoint_7.state.safetensors.tmp-99999", "metrics.jsonl.tmp-12"}) {
    EXPECT_THAT(out, HasSubstr(file));
    EXPECT_FALSE(fs::exists(dir / file)) << file;
  }
  EXPECT_THAT(out, HasSubstr("resuming from " + checkpoint_model_path(d, 4) + " (step 4)"));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir / "checkpoint_4.safetensors.bak"));
  EXPECT_EQ(complete_checkpoints(d), (std::vector<int64_t>{4, 5}));

  // Nothing left over: no such line.
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(train(config("", 6), dir), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), ::testing::Not(HasSubstr("leftovers")));
}

// A run killed before its first checkpoint was complete left params.yaml and the partial first
// save: the partial files go, and the run starts afresh with the dead attempt's config kept aside.
TEST_F(TrainerTest, StartsAfreshOverARunWhoseFirstSaveWasInterrupted) {
  const fs::path dir = root_ / "run";
  fs::create_directories(dir);
  std::ofstream(dir / "params.yaml") << config("", 4);
  std::ofstream(dir / "checkpoint_4.safetensors.tmp-4242") << "partial";
  ASSERT_EQ(train(config("", 4), dir), 0);
  EXPECT_FALSE(fs::exists(dir / "checkpoint_4.safetensors.tmp-4242"));
  EXPECT_EQ(bytes(dir / "params.interrupted-1.yaml"), config("", 4));
  EXPECT_EQ(complete_checkpoints(dir.string()), std::vector<int64_t>{4});
}

// A save that fails (here: its temporary state file cannot be created) reports the file and the
// reason, leaves none of the step's files, and every older checkpoint is still there: pruning
// happens only after a new checkpoint is complete.
TEST_F(TrainerTest, AFailedSaveKeepsEveryOlderCheckpoint) {
  const fs::path dir = root_ / "run";
  const std::string d = dir.string();
  ASSERT_EQ(train(config("", 8), dir), 0);
  ASSERT_EQ(complete_checkpoints(d), (std::vector<int64_t>{4, 8}));
  const fs::path blocker = fmt::format("{}.tmp-{}", checkpoint_state_path(d, 12), ::getpid());
  fs::create_directories(blocker / "x");  // a directory where the temporary file would go
  try {
    train(config("", 12), dir);
    FAIL() << "the save at step 12 succeeded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(checkpoint_state_path(d, 12) + ": cannot create the temporary file"));
    EXPECT_THAT(e.what(), HasSubstr("Is a directory"));
  }
  EXPECT_FALSE(fs::exists(checkpoint_model_path(d, 12)));
  EXPECT_FALSE(fs::exists(dir / "checkpoint_12.done"));
  EXPECT_EQ(complete_checkpoints(d), (std::vector<int64_t>{4, 8}));
  for (int64_t step : {4, 8}) {
    TrainConfig c = load_train_config_yaml(config("", 12), "test.yaml");
    sparsetrain::Setup s = make_setup(std::move(c), 3, false);
    EXPECT_EQ(load_checkpoint(checkpoint_model_path(d, step), *s.model, s.optimizer.get())->progress.step, step);
  }
  fs::remove_all(blocker);
  ASSERT_EQ(train(config("", 12), dir), 0);
  EXPECT_EQ(complete_checkpoints(d), (std::vector<int64_t>{8, 12}));
}

// A full disk: the temporary state file is /dev/full, where every write fails with ENOSPC. The
// error names the file and the reason, the step's model file is removed again, older checkpoints
// are untouched.
TEST_F(TrainerTest, AFullDiskDuringASaveIsAnErrorNamingTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const fs::path dir = root_ / "run";
  const std::string d = dir.string();
  ASSERT_EQ(train(config("", 4), dir), 0);
  const fs::path full = fmt::format("{}.tmp-{}", checkpoint_state_path(d, 5), ::getpid());
  fs::create_symlink("/dev/full", full);
  TrainConfig c = load_train_config_yaml(config("", 5), "test.yaml");
  sparsetrain::Setup s = make_setup(std::move(c), 3, false);
  try {
    TrainerState state;
    state.progress.step = 5;
    save_checkpoint(d, *s.model, *s.optimizer, state);
    FAIL() << "saved onto a full disk";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(checkpoint_state_path(d, 5) + ": cannot write the temporary file"));
    EXPECT_THAT(e.what(), HasSubstr("No space left on device"));
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(full)));  // the temporary file is removed
  EXPECT_FALSE(fs::exists(checkpoint_model_path(d, 5)));
  EXPECT_EQ(complete_checkpoints(d), std::vector<int64_t>{4});
}

// Training on from an older --checkpoint_path in a directory with newer checkpoints would
// overwrite them step by step and then prune its own: refused.
TEST_F(TrainerTest, RefusesToTrainFromAnOlderCheckpointOverNewerOnes) {
  const fs::path dir = root_ / "run";
  const std::string d = dir.string();
  ASSERT_EQ(train(config("", 8), dir), 0);
  TrainConfig c = load_train_config_yaml(config("", 12), "test.yaml");
  sparsetrain::Setup s = make_setup(std::move(c), 3, true);
  RunOptions o;
  o.model_dir = d;
  o.checkpoint_path = checkpoint_model_path(d, 4);
  o.progress = false;
  try {
    run(s, o);
    FAIL() << "trained from step 4 over step 8";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(d + ": holds checkpoints up to step 8, and training on from step 4 of " +
                                    checkpoint_model_path(d, 4) + " would overwrite and delete them"));
  }
  EXPECT_EQ(complete_checkpoints(d), (std::vector<int64_t>{4, 8}));
}

TEST_F(TrainerTest, CheckpointOfAnotherShapeIsRefusedNamingTheTensor) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir), 0);
  std::string other = config("", 4);
  other.replace(other.find("n_embd: 16"), 10, "n_embd: 32");
  try {
    TrainConfig c = load_train_config_yaml(other, "other.yaml");
    sparsetrain::Setup s = make_setup(std::move(c), 3, false);
    load_checkpoint(checkpoint_model_path(dir.string(), 4), *s.model, nullptr);
    FAIL() << "loaded a checkpoint of another shape";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("transformer.wte.weight"));
    EXPECT_THAT(e.what(), HasSubstr("does not fit this model"));
  }
}

// Training on from a checkpoint needs the model, seed, optimizer and sparsity it was trained
// with. Any other config is refused before anything is loaded, naming the config field, the
// parameter and both values; the checkpoint is left as it was.
TEST_F(TrainerTest, ACheckpointOfAnotherConfigIsRefusedNamingTheField) {
  const std::string csr = "sparsity: {algorithm: rigl, sparsity: 0.8, format: csr, update: {freq: 2}}";
  const fs::path dir = root_ / "run";
  const std::string d = dir.string();
  ASSERT_EQ(train(config(csr, 4), dir), 0);
  const std::string model = bytes(checkpoint_model_path(d, 4)), state = bytes(checkpoint_state_path(d, 4));
  auto with = [&](const std::string& from, const std::string& to, const std::string& yaml) {
    std::string text = yaml;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const std::string c_attn = "'transformer.h.0.attn.c_attn.weight'";
  struct Case {
    std::string yaml;
    uint64_t seed;
    std::string said;
  };
  const std::vector<Case> cases = {
      {with("format: csr", "format: bcsr4", config(csr, 8)), 3,
       "sparsity.format 'csr' for " + c_attn + ", this run has 'bcsr4'"},
      {with("format: csr", "format: \"2:4\"", with("0.8", "0.5", config(csr, 8))), 3,
       "sparsity.format 'csr' for " + c_attn + ", this run has '2:4'"},
      {with(", format: csr", "", config(csr, 8)), 3,
       "sparsity.format 'csr' for " + c_attn + ", this run has 'masked-dense'"},
      {with("sparsity: 0.8", "sparsity: 0.7", config(csr, 8)), 3,
       "sparsity.sparsity 'constant(0.8)' for " + c_attn + ", this run has 'constant(0.7)'"},
      {with("rigl", "set", config(csr, 8)), 3, "sparsity.algorithm 'rigl' for " + c_attn + ", this run has 'set'"},
      {config("", 8), 3, "sparsity.algorithm 'rigl' for " + c_attn + ", this run has 'none (dense)'"},
      {with("n_head: 2", "n_head: 4", config(csr, 8)), 3,
       "model 'gpt: 2 layers, 2 heads, width 16, context 16, vocabulary 257', this run has 'gpt: 2 layers, 4 heads"},
      {with("optimizer_type: adamw", "optimizer_type: sgd", config(csr, 8)), 3,
       "optimizer.optimizer_type 'adamw', this run has 'sgd'"},
      {config(csr, 8), 4, "runconfig.seed 3, this run has 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.said);
    try {
      train(c.yaml, dir, RunMode::Train, c.seed);
      ADD_FAILURE() << "trained on from a checkpoint of another config";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(checkpoint_state_path(d, 4) + ": the checkpoint was trained with " + c.said));
      EXPECT_THAT(e.what(), HasSubstr("use the config it was trained with (params.yaml in its model directory)"));
    }
  }
  EXPECT_EQ(complete_checkpoints(d), std::vector<int64_t>{4});
  EXPECT_EQ(bytes(checkpoint_model_path(d, 4)), model);
  EXPECT_EQ(bytes(checkpoint_state_path(d, 4)), state);
  // A dense checkpoint into a sparse run, the other way round.
  const fs::path dense = root_ / "dense";
  ASSERT_EQ(train(config("", 4), dense), 0);
  try {
    train(config(csr, 8), dense);
    FAIL() << "trained a sparse run on from a dense checkpoint";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("sparsity.algorithm 'none (dense)' for " + c_attn + ", this run has 'rigl'"));
  }
  // Evaluation checks the model and which parameters are sparse (not how); the same config trains on.
  try {
    train(with("n_head: 2", "n_head: 4", config(csr, 8)), dir, RunMode::Eval);
    FAIL() << "evaluated with another model";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the checkpoint was trained with model 'gpt: 2 layers, 2 heads"));
  }
  EXPECT_EQ(error_of([&] { train(config("", 8), dir, RunMode::Eval); }),
            checkpoint_state_path(d, 4) + ": the checkpoint was trained with sparsity.algorithm 'rigl' for " + c_attn +
                ", this run has 'none (dense)'; use the config it was trained with (params.yaml in its model "
                "directory)");
  EXPECT_EQ(train(with("rigl", "set", config(csr, 8)), dir, RunMode::Eval), 0);
  EXPECT_EQ(train(config(csr, 6), dir), 0);
}

// A checkpoint whose trainer state lacks a field (one written before sparsetrain recorded it) is
// refused naming the field and the way on, before anything is loaded; its weights still start a
// new run.
TEST_F(TrainerTest, ACheckpointMissingATrainerStateFieldIsRefusedNamingIt) {
  const fs::path dir = root_ / "run";
  const std::string d = dir.string();
  ASSERT_EQ(train(config("", 4), dir), 0);
  SafetensorsFile state = read_safetensors(checkpoint_state_path(d, 4));
  nlohmann::json trainer = nlohmann::json::parse(state.metadata.at("sparsetrain.trainer"));
  ASSERT_EQ(trainer.erase("loss_mean"), 1u);
  state.metadata["sparsetrain.trainer"] = trainer.dump();
  write_safetensors(checkpoint_state_path(d, 4), state.tensors, state.metadata);
  const nlohmann::json marker = {{"step", 4},
                                 {"model_bytes", fs::file_size(checkpoint_model_path(d, 4))},
                                 {"state_bytes", fs::file_size(checkpoint_state_path(d, 4))}};
  std::ofstream(dir / "checkpoint_4.done") << marker.dump() << "\n";
  ASSERT_EQ(complete_checkpoints(d), std::vector<int64_t>{4});
  const std::string model = bytes(checkpoint_model_path(d, 4));
  EXPECT_EQ(error_of([&] { train(config("", 8), dir); }),
            checkpoint_state_path(d, 4) +
                ": the trainer state has no 'loss_mean'. A checkpoint written before sparsetrain recorded it (before "
                "2026-11-23) cannot be resumed; start a new run from its weights with --checkpoint_path and "
                "--load_checkpoint_states model");
  EXPECT_EQ(bytes(checkpoint_model_path(d, 4)), model);
  // Metadata that is not JSON, also by a number beyond a double's range (not a parse_error to
  // nlohmann), is named as such.
  state.metadata["sparsetrain.trainer"] = R"({"step": 1e400})";
  write_safetensors(checkpoint_state_path(d, 4), state.tensors, state.metadata);
  EXPECT_EQ(error_of([&] { read_checkpoint_state(checkpoint_model_path(d, 4)); }),
            checkpoint_state_path(d, 4) +
                ": the 'sparsetrain.trainer' metadata is not valid JSON: number overflow parsing '1e400'");
  TrainConfig c = load_train_config_yaml(config("", 8), "test.yaml");
  sparsetrain::Setup s = make_setup(std::move(c), 3, true);
  RunOptions o;
  o.model_dir = (root_ / "new").string();
  o.checkpoint_path = checkpoint_model_path(d, 4);
  o.weights_only = true;
  o.progress = false;
  EXPECT_EQ(run(s, o), 0);
}

// Weights in Cerebras' NaN form (NaN marks a pruned weight, no masks) are refused by every entry
// point that reads a model file, naming the form and the command that converts it; the converted
// file starts a run. NaN beside masks is a value gone wrong and refused as such.
TEST_F(TrainerTest, NanFormWeightsAreRefusedNamingTheConversion) {
  const std::string csr = "sparsity: {algorithm: static, sparsity: 0.8, format: csr}";
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config(csr, 4), dir), 0);
  const SafetensorsFile file = read_safetensors(checkpoint_model_path(dir.string(), 4));
  const std::string nan = (root_ / "nan.safetensors").string();
  write_safetensors(nan, to_nan_form(file.tensors), file.metadata);
  const std::string conversion = ": tensor 'transformer.h.0.attn.c_attn.weight' holds NaN (element ";
  const std::string command =
      "and the file has no masks: Cerebras' NaN form, where NaN marks a pruned weight. "
      "Convert it first: sparsetrain inspect " +
      nan + " --import-nan CONVERTED.safetensors";
  auto start = [&](const std::string& sparsity, RunMode mode, bool weights_only, const fs::path& to) {
    TrainConfig c = load_train_config_yaml(config(sparsity, 8), "test.yaml");
    sparsetrain::Setup s = make_setup(std::move(c), 3, true);
    RunOptions o;
    o.mode = mode;
    o.model_dir = to.string();
    o.checkpoint_path = nan;
    o.weights_only = weights_only;
    o.progress = false;
    return run(s, o);
  };
  for (const auto& run_case : {std::pair{csr, true}, {std::string(), true}}) {
    const std::string& sparsity = run_case.first;  // not a structured binding: clang 14 cannot capture those
    const bool weights_only = run_case.second;
    const std::string message = error_of([&] { start(sparsity, RunMode::Train, weights_only, root_ / "new"); });
    EXPECT_THAT(message, AllOf(StartsWith(nan + conversion), HasSubstr(command))) << sparsity;
  }
  EXPECT_THAT(error_of([&] { start(csr, RunMode::Eval, false, root_ / "eval"); }),
              AllOf(StartsWith(nan + conversion), HasSubstr(command)));
  StateDict poisoned = file.tensors;
  poisoned.find("transformer.h.1.mlp.c_fc.weight")->values[3] = std::nanf("");
  const std::string bad = (root_ / "bad.safetensors").string();
  write_safetensors(bad, poisoned, file.metadata);
  TrainConfig c = load_train_config_yaml(config(csr, 8), "test.yaml");
  sparsetrain::Setup s = make_setup(std::move(c), 3, false);
  EXPECT_EQ(error_of([&] { load_model_weights(bad, *s.model); }),
            bad +
                ": tensor 'transformer.h.1.mlp.c_fc.weight' holds the non-finite value nan (element 3): the weights "
                "went wrong (a diverged run?); start from an earlier checkpoint");
}

TEST_F(TrainerTest, AStateFileGivenAsTheModelFileNamesTheModelFile) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir), 0);
  TrainConfig c = load_train_config_yaml(config("", 8), "test.yaml");
  sparsetrain::Setup s = make_setup(std::move(c), 3, true);
  RunOptions o;
  o.mode = RunMode::Eval;
  o.model_dir = dir.string();
  o.checkpoint_path = checkpoint_state_path(dir.string(), 4);
  o.progress = false;
  EXPECT_EQ(error_of([&] { run(s, o); }), checkpoint_state_path(dir.string(), 4) +
                                              ": is a checkpoint's state file; give its model file, " +
                                              checkpoint_model_path(dir.string(), 4));
}

// A resumed run whose config changed says what changed, keeps the earlier config beside the new
// params.yaml and goes on; an unchanged config (layout and comments aside) says nothing.
TEST_F(TrainerTest, AResumeWithAChangedConfigSaysWhatChangedAndKeepsBoth) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir), 0);
  std::string changed = config("", 8);
  changed.replace(changed.find("learning_rate: 0.003"), 20, "learning_rate: 0.001");
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(train(changed, dir), 0);
  std::string out = ::testing::internal::GetCapturedStdout();
  const fs::path earlier = dir / "params.to_step_4.yaml";
  EXPECT_THAT(out, HasSubstr("the config differs from the one the run used up to step 4 (kept as " + earlier.string() +
                             "): optimizer.learning_rate: 0.003 -> 0.001; runconfig.max_steps: 4 -> 8\n"));
  EXPECT_EQ(bytes(earlier), config("", 4));
  EXPECT_EQ(bytes(dir / "params.yaml"), changed);
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(train("# the same config\n" + changed, dir), 0);
  out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, ::testing::Not(HasSubstr("the config differs")));
  EXPECT_EQ(bytes(dir / "params.yaml"), changed);
}

// Every start of a run appends what it ran with to run_environment.jsonl: the build, the CPU,
// each kernel family's ISA, the threads. A training run resumed with another of these says which
// changed (the run is then no longer bit-identical to one that ran through); evaluation does not.
TEST_F(TrainerTest, EveryStartRecordsItsEnvironmentAndAResumeOnAnotherSaysWhatChanged) {
  const fs::path dir = root_ / "run";
  const int threads = num_threads();
  ASSERT_EQ(train(config("", 4), dir), 0);
  auto records = [&] {
    std::vector<nlohmann::json> lines;
    std::istringstream in(bytes(dir / "run_environment.jsonl"));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
  };
  ASSERT_EQ(records().size(), 1u);
  const nlohmann::json first = records()[0];
  const BuildInfo& build = build_info();
  EXPECT_EQ(first["step"], 0);
  EXPECT_EQ(first["mode"], "train");
  EXPECT_EQ(first["sparsetrain"], std::string(build.version));
  EXPECT_EQ(first["compiler"], std::string(build.compiler));
  EXPECT_EQ(first["build_flags"], std::string(build.flags));
  EXPECT_EQ(first["native"], build.native);
  EXPECT_EQ(first["native"], std::string(build.flags).find("-march=native") != std::string::npos);
  EXPECT_EQ(first["cpu"], describe(cpu_model()));
  EXPECT_EQ(first["kernel_isa"], std::string(isa_name(effective_isa())));
  EXPECT_EQ(first["onednn_isa"], dense_isa());
  EXPECT_EQ(first["threads"], threads);
  EXPECT_EQ(first["portable"], !build.native && effective_isa() == CpuIsa::Avx2 && dense_isa() == "avx2");

  {
    testing::ThreadCount other(threads + 1);
    ::testing::internal::CaptureStdout();
    ASSERT_EQ(train(config("", 8), dir), 0);
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_THAT(out, HasSubstr(fmt::format("this run continues with another environment than its start at step 0 "
                                           "(docs/reliability.md: it is no longer bit-identical to a run that did "
                                           "not stop): threads {} -> {}\n",
                                           threads, threads + 1)));
  }
  ASSERT_EQ(records().size(), 2u);
  EXPECT_EQ(records()[1]["step"], 4);
  EXPECT_EQ(records()[1]["threads"], threads + 1);

  ::testing::internal::CaptureStdout();
  ASSERT_EQ(train(config("", 8), dir, RunMode::Eval), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), ::testing::Not(HasSubstr("another environment")));
  ASSERT_EQ(records().size(), 3u);
  EXPECT_EQ(records()[2]["mode"], "eval");
  EXPECT_EQ(records()[2]["step"], 8);
}

// Loading a checkpoint itself (one saved without the recorded config) checks the masks: none
// for a sparse parameter, or one for a dense parameter, is an error naming the tensor; and the
// optimizer, by name.
TEST_F(TrainerTest, LoadingACheckpointChecksMasksAndOptimizer) {
  const std::string csr = "sparsity: {algorithm: rigl, sparsity: 0.8, format: csr, update: {freq: 2}}";
  ASSERT_EQ(train(config("", 4), root_ / "dense"), 0);
  ASSERT_EQ(train(config(csr, 4), root_ / "sparse"), 0);
  auto load = [&](const std::string& sparsity, const fs::path& dir) {
    TrainConfig c = load_train_config_yaml(config(sparsity, 4), "test.yaml");
    sparsetrain::Setup s = make_setup(std::move(c), 3, false);
    load_checkpoint(checkpoint_model_path(dir.string(), 4), *s.model, s.optimizer.get());
  };
  try {
    load(csr, root_ / "dense");
    FAIL() << "a sparse model loaded a checkpoint without masks";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not fit this model: state dict: no mask "
                                    "'transformer.h.0.attn.c_attn.weight_mask' for the sparse parameter "
                                    "'transformer.h.0.attn.c_attn.weight'"));
  }
  try {
    load("", root_ / "sparse");
    FAIL() << "a dense model loaded a checkpoint with masks";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'transformer.h.0.attn.c_attn.weight_mask' has a mask but the parameter is dense"));
  }
  std::string sgd = config("", 4);
  sgd.replace(sgd.find("optimizer_type: adamw"), 21, "optimizer_type: sgd");
  TrainConfig c = load_train_config_yaml(sgd, "sgd.yaml");
  sparsetrain::Setup s = make_setup(std::move(c), 3, false);
  try {
    load_checkpoint(checkpoint_model_path((root_ / "dense").string(), 4), *s.model, s.optimizer.get());
    FAIL() << "an sgd run loaded an adamw state";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("checkpoint_4.state.safetensors: saved by the optimizer 'adamw'; this run's "
                                    "optimizer.optimizer_type is 'sgd'"));
  }
}

// bf16 runs its products in bf16 (the bf16 kernels run, the weights differ from fp32's) and
// follows the fp32 run closely; its checkpoint records the precision, refuses to train on in
// fp32, and loads into an fp32 run as weights.
TEST_F(TrainerTest, Bf16TrainsCloseToFp32AndResumesOnlyInBf16) {
  const std::string csr = "sparsity: {algorithm: static, sparsity: 0.8, format: csr}";
  const fs::path fp32 = root_ / "fp32", bf16 = root_ / "bf16";
  ASSERT_EQ(train(config(csr, 8), fp32), 0);
  ASSERT_EQ(train(in_bf16(config(csr, 8)), bf16), 0);
  EXPECT_EQ(last_dispatch("spmm_fwd_bf16").find("spmm_fwd_csr_bf16"), 0u) << last_dispatch("spmm_fwd_bf16");
  EXPECT_NE(bytes(checkpoint_model_path(fp32.string(), 8)), bytes(checkpoint_model_path(bf16.string(), 8)));
  auto last_loss = [](const fs::path& dir) {
    std::ifstream in(dir / "metrics.jsonl");
    std::string line;
    double loss = 0;
    while (std::getline(in, line)) {
      const auto row = nlohmann::json::parse(line);
      if (row["split"] == "train") loss = row["loss"].get<double>();
    }
    return loss;
  };
  const double a = last_loss(fp32), b = last_loss(bf16);
  ASSERT_GT(a, 0.0);
  EXPECT_NEAR(b, a, 0.02 * a) << "bf16 left the fp32 run";
  const CheckpointState state = read_checkpoint_state(checkpoint_model_path(bf16.string(), 8));
  EXPECT_EQ(state.trainer.precision, std::optional<std::string>("bf16"));

  EXPECT_THAT(error_of([&] { train(config(csr, 12), bf16); }),
              AllOf(HasSubstr("checkpoint_8.state.safetensors: the checkpoint was trained in precision bf16, this "
                              "run has fp32"),
                    HasSubstr("--load_checkpoint_states model")));
  // Evaluation takes a checkpoint of either precision.
  EXPECT_EQ(train(config(csr, 8), bf16, RunMode::Eval), 0);
}

TEST(TrainConfig, MixedPrecisionKeysFollowTheModelZoo) {
  const std::string rest = "train_input: {data: brown}\noptimizer: {learning_rate: 0.1}\nrunconfig: {max_steps: 1}\n";
  auto precision = [&](const std::string& model) {
    return load_train_config_yaml("model: {name: gpt" + model + "}\n" + rest, "mp.yaml").precision;
  };
  EXPECT_EQ(precision(""), Precision::Fp32);
  EXPECT_EQ(precision(", mixed_precision: false"), Precision::Fp32);
  EXPECT_EQ(precision(", mixed_precision: true, fp16_type: bfloat16"), Precision::Bf16);
  EXPECT_EQ(
      load_train_config_yaml("model: {name: mlp, mixed_precision: true, fp16_type: bfloat16}\ntrain_input: "
                             "{data: fashion_mnist}\noptimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n",
                             "mlp.yaml")
          .precision,
      Precision::Bf16);
  EXPECT_THAT(error_of([&] { precision(", mixed_precision: true"); }),
              AllOf(StartsWith("mp.yaml:1:"), HasSubstr("model.mixed_precision: true without fp16_type means float16"),
                    HasSubstr("add 'fp16_type: bfloat16'")));
  EXPECT_THAT(error_of([&] { precision(", mixed_precision: true, fp16_type: float16"); }),
              HasSubstr("model.fp16_type: 'float16' is not supported"));
  EXPECT_THAT(error_of([&] { precision(", mixed_precision: true, fp16_type: cbfloat16"); }),
              HasSubstr("model.fp16_type: 'cbfloat16' is not supported"));
  EXPECT_THAT(error_of([&] { precision(", mixed_precision: true, fp16_type: bf16"); }),
              HasSubstr("model.fp16_type: expected bfloat16, got 'bf16'"));
  EXPECT_THAT(error_of([&] { precision(", fp16_type: bfloat16"); }),
              HasSubstr("model.fp16_type: takes effect only with 'mixed_precision: true'"));
  EXPECT_THAT(error_of([&] { precision(", mixed_precision: yes please"); }), HasSubstr("model.mixed_precision"));

  // --precision writes the keys into the recorded config, and fp32 removes them.
  TrainConfig c = load_train_config_yaml("model: {name: gpt}\n" + rest, "mp.yaml");
  RunOverrides bf16;
  bf16.precision = Precision::Bf16;
  apply_run_overrides(c, bf16);
  EXPECT_EQ(c.precision, Precision::Bf16);
  EXPECT_THAT(c.text, HasSubstr("--precision bf16"));
  EXPECT_EQ(load_train_config_yaml(c.text, "params.yaml").precision, Precision::Bf16);
  RunOverrides fp32;
  fp32.precision = Precision::Fp32;
  apply_run_overrides(c, fp32);
  EXPECT_EQ(load_train_config_yaml(c.text, "params.yaml").precision, Precision::Fp32);
}

TEST(TrainConfig, OverridesAreRecordedInTheConfigText) {
  const std::string yaml =
      "# a comment\nmodel: {name: mlp, input_size: 784, hidden_sizes: [8]}\ntrain_input: {data: fashion_mnist}\n"
      "optimizer: {learning_rate: 0.1}\nsparsity: {algorithm: set, sparsity: 0.5, update: {freq: 10}}\n"
      "runconfig: {num_epochs: 3, seed: 4, log_steps: 7}\n";
  TrainConfig unchanged = load_train_config_yaml(yaml, "as_given.yaml");
  apply_run_overrides(unchanged, {});
  EXPECT_EQ(unchanged.text, yaml);  // nothing overridden: the file as written, comments included

  TrainConfig c = load_train_config_yaml(yaml, "as_given.yaml");
  RunOverrides given;
  given.max_steps = 12;
  given.seed = 9;
  given.num_threads = 1;
  apply_run_overrides(c, given);
  EXPECT_EQ(c.run.max_steps, 12);
  EXPECT_EQ(c.run.num_epochs, 0);
  EXPECT_EQ(c.run.seed, 9u);
  EXPECT_EQ(c.run.num_threads, 1);
  EXPECT_THAT(c.text, HasSubstr("as_given.yaml with the command-line overrides --max_steps 12, --seed 9, --threads 1"));
  // The recorded text is a valid config that reads back as the run that was made.
  const TrainConfig back = load_train_config_yaml(c.text, "params.yaml");
  EXPECT_EQ(back.run.max_steps, 12);
  EXPECT_EQ(back.run.num_epochs, 0);
  EXPECT_EQ(back.run.seed, 9u);
  EXPECT_EQ(back.run.num_threads, 1);
  EXPECT_EQ(back.run.log_steps, 7);
  EXPECT_EQ(std::get<MlpConfig>(back.model).hidden, std::vector<int64_t>{8});
  ASSERT_EQ(back.sparsity.groups.size(), 1u);
  EXPECT_EQ(back.sparsity.groups[0].algorithm, "set");
}

TEST(TrainConfig, EvalBatchesOverrideReachesTheEvaluationData) {
  const std::string train = "model: {name: gpt}\ntrain_input: {data: brown, batch_size: 3, validation_fraction: 0.2}\n";
  const std::string rest = "optimizer: {learning_rate: 0.1}\nrunconfig: {max_steps: 5}\n";
  for (const std::string& eval :
       {std::string("eval_input: {data: brown, batch_size: 6, validation_fraction: 0.2, eval_batches: 40}\n"),
        std::string()}) {
    SCOPED_TRACE(eval.empty() ? "no eval_input: evaluation reads train_input's data" : "eval_input");
    TrainConfig c = load_train_config_yaml(train + eval + rest, "e.yaml");
    EXPECT_EQ(c.eval_input.eval_batches, eval.empty() ? 0 : 40);
    RunOverrides two;
    two.eval_batches = 2;
    apply_run_overrides(c, two);
    EXPECT_EQ(c.eval_input.eval_batches, 2);
    EXPECT_THAT(c.text, HasSubstr("e.yaml with the command-line overrides --eval_batches 2"));
    // The recorded config reads back as the run that was made: the same evaluation data, 2 batches.
    const TrainConfig back = load_train_config_yaml(c.text, "params.yaml");
    EXPECT_EQ(back.eval_input.eval_batches, 2);
    EXPECT_EQ(back.eval_input.batch_size, eval.empty() ? 3 : 6);
    EXPECT_EQ(back.eval_input.validation_fraction, 0.2);
    EXPECT_EQ(back.train_input.eval_batches, 0);
    EXPECT_EQ(back.run.max_steps, 5);
  }
}

TEST(TrainConfig, NumericFaultKeysAreChecked) {
  const std::string head = "model: {name: mlp}\ntrain_input: {data: fashion_mnist}\noptimizer: {learning_rate: 0.1}\n";
  const TrainConfig c = load_train_config_yaml(
      head + "runconfig: {num_epochs: 1, nonfinite_policy: stop, loss_spike_factor: 3}\n", "a.yaml");
  EXPECT_EQ(c.run.nonfinite_policy, NonfinitePolicy::Stop);
  EXPECT_EQ(c.run.loss_spike_factor, 3.0);
  EXPECT_EQ(load_train_config_yaml(head + "runconfig: {num_epochs: 1}\n", "a.yaml").run.nonfinite_policy,
            NonfinitePolicy::Skip);
  for (const char* bad : {"nonfinite_policy: ignore", "loss_spike_factor: 0.5", "loss_spike_factor: 1"}) {
    SCOPED_TRACE(bad);
    try {
      load_train_config_yaml(head + "runconfig:\n  num_epochs: 1\n  " + bad + "\n", "b.yaml");
      FAIL();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("b.yaml:6:"));
      EXPECT_THAT(e.what(), HasSubstr(std::string(bad).substr(0, std::string(bad).find(':'))));
    }
  }
}

// layer_norm_epsilon is computed in float32: a value float cannot hold (beyond its range, or
// rounding to 0) is refused at its key, not cast.
TEST(TrainConfig, ALayerNormEpsilonFloatCannotHoldIsRefused) {
  const std::string tail = "train_input: {data: brown}\noptimizer: {learning_rate: 0.1}\nrunconfig: {max_steps: 1}\n";
  const TrainConfig ok = load_train_config_yaml("model: {name: gpt, layer_norm_epsilon: 1.0e-6}\n" + tail, "a.yaml");
  EXPECT_EQ(std::get<GptConfig>(ok.model).layer_norm_eps, 1e-6f);
  for (const char* bad : {"1.0e+300", "1.0e-60", "0"})
    EXPECT_EQ(
        error_of([&] {
          load_train_config_yaml(fmt::format("model: {{name: gpt, layer_norm_epsilon: {}}}\n", bad) + tail, "a.yaml");
        }),
        fmt::format("a.yaml:1:40: model.layer_norm_epsilon: expected a number > 0 that float32 holds, got {}", bad));
}

TEST(TrainConfig, TensorboardIsOnUnlessTurnedOff) {
  const std::string head = "model: {name: mlp}\ntrain_input: {data: fashion_mnist}\noptimizer: {learning_rate: 0.1}\n";
  EXPECT_TRUE(load_train_config_yaml(head + "runconfig: {num_epochs: 1}\n", "a.yaml").run.tensorboard);
  EXPECT_FALSE(
      load_train_config_yaml(head + "runconfig: {num_epochs: 1, tensorboard: false}\n", "a.yaml").run.tensorboard);
  const std::string bad = error_of(
      [&] { load_train_config_yaml(head + "runconfig:\n  num_epochs: 1\n  tensorboard: sometimes\n", "b.yaml"); });
  EXPECT_THAT(bad, AllOf(HasSubstr("b.yaml:6:"), HasSubstr("tensorboard"), HasSubstr("true or false")));
}

TEST(TrainConfig, SparseInitIsScaledUnlessSaidOtherwise) {
  const std::string rest =
      "train_input: {data: fashion_mnist}\noptimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n";
  EXPECT_EQ(load_train_config_yaml("model: {name: mlp}\n" + rest, "a.yaml").sparse_init, SparseInit::Scaled);
  EXPECT_EQ(load_train_config_yaml("model: {name: mlp, sparse_init: dense}\n" + rest, "a.yaml").sparse_init,
            SparseInit::Dense);
  try {
    load_train_config_yaml("model:\n  name: mlp\n  sparse_init: he\n" + rest, "b.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("b.yaml:3:16"));
    EXPECT_THAT(e.what(), HasSubstr("expected dense or scaled"));
  }
}

// Masks are drawn apart from the initial weights (a random mask keyed like the initialization kept
// exactly the largest weights, all positive, and the network diverged), and from the run's seed
// unless the sparsity section sets its own.
TEST(SetupSeeds, RandomMasksAreIndependentOfTheWeightsAndFollowTheRunSeed) {
  const auto setup = [](const std::string& sparsity_seed, uint64_t seed) {
    TrainConfig c = load_train_config_yaml(
        "model: {name: mlp, hidden_sizes: [300], sparse_init: dense}\ntrain_input: {data: fashion_mnist}\n"
        "optimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n"
        "sparsity: {algorithm: static, sparsity: 0.9" +
            sparsity_seed + "}\n",
        "a.yaml");
    return make_setup(std::move(c), seed, false);
  };
  const auto mask_of = [](sparsetrain::Setup& s) { return s.model->parameters()[0]->mask(); };
  for (uint64_t seed : {0u, 1u}) {
    sparsetrain::Setup s = setup("", seed);
    const Parameter& w = *s.model->parameters()[0];  // layers.0.weight [300 x 784], U(+-1/28) before masking
    const Matrix values = w.to_dense();
    const Mask mask = w.mask();
    double sum = 0.0;
    int64_t kept = 0;
    for (int64_t i = 0; i < values.size(); ++i)
      if (mask.data()[i]) sum += values.data()[i], ++kept;
    ASSERT_GT(kept, 20000);
    EXPECT_LT(std::abs(sum / static_cast<double>(kept)), 0.05 / 28.0) << "kept weights are biased, seed " << seed;
  }
  sparsetrain::Setup a = setup("", 0), b = setup("", 1), c = setup(", seed: 5", 0), d = setup(", seed: 5", 1);
  EXPECT_FALSE(mask_of(a) == mask_of(b)) << "--seed varies the masks";
  EXPECT_TRUE(mask_of(c) == mask_of(d)) << "a sparsity seed fixes them";
}

// Brown categories: a held-out genre for fine-tuning (SPDF). The selection changes the data, the
// split of all documents is the union of both selections' sizes, and a misspelt category is an
// error naming the file and listing the real ones.
TEST(BrownCategories, SelectAndExcludeDocuments) {
  const auto describe = [](const std::string& filter) {
    const std::string yaml =
        "model: {name: gpt, n_positions: 64, n_layer: 1, n_head: 2, n_embd: 16}\n"
        "train_input: {data: brown, batch_size: 4, validation_fraction: 0.1" +
        filter + "}\noptimizer: {learning_rate: 0.001}\nrunconfig: {max_steps: 1}\n";
    return make_setup(load_train_config_yaml(yaml, "cat.yaml"), 1, true).data->describe();
  };
  const auto tokens = [](const std::string& text) {  // "brown: 483,358 training tokens, ..."
    std::string digits;
    for (char c : text.substr(0, text.find(" training")))
      if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
    return std::stoll(digits);
  };
  const int64_t all = tokens(describe("")), news = tokens(describe(", categories: [news]")),
                rest = tokens(describe(", exclude_categories: [news]"));
  EXPECT_GT(news, 100000);
  EXPECT_LT(news, all / 5);
  EXPECT_GT(rest, all / 2);
  EXPECT_NEAR(static_cast<double>(news + rest), static_cast<double>(all), 0.05 * static_cast<double>(all));
  EXPECT_THAT(error_of([&] { describe(", categories: [news, nwes]"); }),
              AllOf(HasSubstr("cat.yaml: train_input.categories: no Brown document has the category 'nwes'"),
                    HasSubstr("adventure, belles_lettres")));
  EXPECT_THAT(error_of([&] {
                load_train_config_yaml(
                    "model: {name: mlp}\ntrain_input: {data: fashion_mnist, categories: [news]}\n"
                    "optimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n",
                    "m.yaml");
              }),
              HasSubstr("'categories' is for brown data, not fashion_mnist"));
}

// subset_shuffle: numpy takes the images numpy's np.random.seed(0) shuffles pick, training
// indices first, then test indices from the same stream (numpy_legacy_shuffles is checked
// against numpy itself in test_numpy_shuffle).
TEST(TrainConfig, NumpySubsetShuffleTakesTheReferencesImages) {
  const auto setup = [](const std::string& shuffle) {
    return make_setup(
        load_train_config_yaml("model: {name: mlp, hidden_sizes: [4]}\n"
                               "train_input: {data: fashion_mnist, batch_size: 5, num_examples: 5" +
                                   shuffle +
                                   "}\neval_input: {data: fashion_mnist, batch_size: 3, num_examples: 3}\n"
                                   "optimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n",
                               "s.yaml"),
        1, true);
  };
  const FashionMnist data = load_fashion_mnist();
  const std::vector<int64_t> sizes = {data.train.count(), data.test.count()};
  const std::vector<std::vector<int64_t>> numpy = numpy_legacy_shuffles(sizes, 0);
  // The positions in `order` whose image and label some row of the batch holds, sorted.
  const auto rows_match = [](const Batch& b, const ImageSet& set, std::span<const int64_t> order) {
    std::vector<int64_t> got;
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t i = 0; i < static_cast<int64_t>(order.size()); ++i)
        if (std::equal(set.image(order[i]), set.image(order[i]) + set.images.cols(),
                       b.inputs.data() + r * b.inputs.cols()) &&
            set.labels[static_cast<std::size_t>(order[i])] == b.targets[static_cast<std::size_t>(r)])
          got.push_back(i);
    std::sort(got.begin(), got.end());
    return got;
  };
  sparsetrain::Setup numpy_setup = setup(", subset_shuffle: numpy");
  Batch b;
  numpy_setup.data->eval_batch(0, b);
  EXPECT_EQ(rows_match(b, data.test, std::span(numpy[1]).first(3)), (std::vector<int64_t>{0, 1, 2}));
  numpy_setup.data->train_batch(1, 1, b);
  EXPECT_EQ(rows_match(b, data.train, std::span(numpy[0]).first(5)), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  sparsetrain::Setup philox_setup = setup("");
  philox_setup.data->eval_batch(0, b);
  EXPECT_TRUE(rows_match(b, data.test, std::span(numpy[1]).first(3)).empty());

  const std::string rest = "optimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n";
  EXPECT_THAT(error_of([&] {
                load_train_config_yaml(
                    "model: {name: mlp}\ntrain_input: {data: fashion_mnist}\n"
                    "eval_input: {data: fashion_mnist, subset_shuffle: numpy}\n" +
                        rest,
                    "e.yaml");
              }),
              HasSubstr("e.yaml:3:35: eval_input.subset_shuffle: 'subset_shuffle' belongs in train_input"));
  EXPECT_THAT(error_of([&] {
                load_train_config_yaml(
                    "model: {name: mlp}\ntrain_input: {data: fashion_mnist, subset_shuffle: numbpy}\n" + rest,
                    "f.yaml");
              }),
              HasSubstr("expected philox or numpy"));
  EXPECT_THAT(error_of([&] {
                load_train_config_yaml("model: {name: gpt}\ntrain_input: {data: brown, subset_shuffle: numpy}\n" + rest,
                                       "g.yaml");
              }),
              HasSubstr("'subset_shuffle' is for image data, not brown"));
}

TEST(TrainConfig, SetReferenceKeysAreRead) {
  const std::string rest = "train_input: {data: fashion_mnist}\nrunconfig: {num_epochs: 1}\n";
  const TrainConfig c = load_train_config_yaml(
      "model: {name: mlp, output_activation: sigmoid, loss: set_mse, initializer_range: 0.1,\n"
      "        inverted_dropout: false, dropout_masks_gradient: false}\n"
      "optimizer: {optimizer_type: sgd, learning_rate: 0.05, weight_decay: 0.004, decoupled_weight_decay: true}\n" +
          rest,
      "a.yaml");
  const MlpConfig& mlp = std::get<MlpConfig>(c.model);
  EXPECT_EQ(mlp.loss, MlpLoss::SetMse);
  EXPECT_EQ(mlp.init_std, 0.1);
  EXPECT_FALSE(mlp.inverted_dropout);
  EXPECT_FALSE(mlp.dropout_masks_gradient);
  EXPECT_TRUE(MlpConfig{}.dropout_masks_gradient);
  EXPECT_TRUE(c.optimizer.sgd.decoupled_weight_decay);
  EXPECT_EQ(c.optimizer.sgd.weight_decay, 0.004);
  const auto error = [&](const std::string& head) {
    try {
      load_train_config_yaml(head + rest, "b.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("model: {name: mlp, loss: set_mse}\noptimizer: {learning_rate: 0.1}\n"),
              HasSubstr("set_mse loss needs 'output_activation' sigmoid"));
  EXPECT_THAT(error("model: {name: mlp}\noptimizer: {learning_rate: 0.1, decoupled_weight_decay: true}\n"),
              HasSubstr("'decoupled_weight_decay' does not apply to the adamw optimizer"));
  EXPECT_THAT(error("model: {name: mlp, initializer_range: -1}\noptimizer: {learning_rate: 0.1}\n"),
              HasSubstr("b.yaml:1:"));
  EXPECT_THAT(error("model: {name: mlp, dropout_masks_gradient: 2}\noptimizer: {learning_rate: 0.1}\n"),
              HasSubstr("true or false"));
}

TEST(TrainConfig, ErrorsNameFileLineAndKey) {
  const std::string yaml =
      "model: {name: gpt}\ntrain_input: {data: brown}\noptimizer:\n  optimizer_type: adamw\n  learning_rat: 0.1\n"
      "runconfig: {max_steps: 1}\n";
  try {
    load_train_config_yaml(yaml, "bad.yaml");
    FAIL();
  } catch (const Error& e) {
    // The key path names the key once; the suggestion and the section's keys follow.
    EXPECT_THAT(e.what(), StartsWith("bad.yaml:5:3: optimizer.learning_rat: unknown key (did you mean "
                                     "'learning_rate'?); optimizer takes "));
  }
  EXPECT_THROW(load_train_config_yaml("model: {name: gpt}\ntrain_input: {data: fashion_mnist}\noptimizer: "
                                      "{learning_rate: 0.1}\nruncconfig: {max_steps: 1}\n",
                                      "x.yaml"),
               Error);
  try {
    load_train_config_yaml(
        "model: {name: gpt, n_embd: 10, n_head: 3}\ntrain_input: {data: brown}\noptimizer: "
        "{learning_rate: 0.1}\nruncconfig: {max_steps: 1}\n",
        "x.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), StartsWith("x.yaml:4:1: runcconfig: unknown section (did you mean 'runconfig'?); a "
                                     "training config has model, train_input, eval_input, optimizer, sparsity, "
                                     "runconfig and trainer"));
  }
  try {
    load_train_config_yaml(
        "model: {name: mlp, hidden_sizes: [10, 0]}\ntrain_input: {data: fashion_mnist}\n"
        "optimizer: {learning_rate: 0.1}\nrunconfig: {num_epochs: 1}\n",
        "x.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("x.yaml:1:"));
    EXPECT_THAT(e.what(), HasSubstr("model.hidden_sizes[1]"));
  }
  try {
    load_train_config_yaml(",", "comma.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "comma.yaml:1:1: unexpected ',' outside a flow collection ([...] or {...})");
  }
}

TEST_F(TrainerTest, WhatOnlyTheModelCanRefuseIsLocatedAtItsKeyWithASuggestion) {
  const auto setup_error = [&](const std::string& yaml) {
    return error_of([&] { make_setup(load_train_config_yaml(yaml, "test.yaml"), 3, false); });
  };
  // A later group whose globs an earlier group already took.
  EXPECT_EQ(setup_error(config(R"(sparsity:
  - {sparsity: 0.5, param_filter: "*.weight"}
  - {sparsity: 0.9, param_filter: "*c_attn.weight"})",
                               4)),
            "test.yaml:7:21: sparsity[1].param_filter: every parameter globs(*c_attn.weight) matches "
            "(transformer.h.0.attn.c_attn.weight, transformer.h.1.attn.c_attn.weight) is already claimed by group 1 "
            "(test.yaml:6:5: sparsity[0]), and a parameter goes to the first group whose filter matches; narrow group "
            "1's filter or remove this group");
  // A regex written as a glob.
  EXPECT_EQ(
      setup_error(config(R"(sparsity: {sparsity: 0.5, param_filter: '.*c_attn\.weight'})", 4)),
      "test.yaml:5:27: sparsity.param_filter: globs(.*c_attn\\.weight) matches no parameter that can be "
      "sparsified; '.*c_attn\\.weight' reads as a regex, but param_filter takes globs ('*' matches any text, '.' "
      "only a dot): write a glob such as '*c_attn.weight', or select by regex with param_name_patterns; the model "
      "has: transformer.wte.weight, transformer.wpe.weight, transformer.h.0.ln_1.weight, transformer.h.0.ln_1.bias, "
      "transformer.h.0.attn.c_attn.weight, transformer.h.0.attn.c_attn.bias, transformer.h.0.attn.c_proj.weight, "
      "transformer.h.0.attn.c_proj.bias, and 20 more");
  // An override naming no parameter of its group.
  EXPECT_EQ(
      setup_error(config(
          R"(sparsity: {sparsity: 0.5, param_filter: "*c_fc.weight", overrides: {transformer.h.0.mlp.c_fc.weigth: 0.3}})",
          4)),
      "test.yaml:5:69: sparsity.overrides[\"transformer.h.0.mlp.c_fc.weigth\"]: 'transformer.h.0.mlp.c_fc.weigth' "
      "is not a parameter of this group (did you mean 'transformer.h.0.mlp.c_fc.weight'?); the group claims: "
      "transformer.h.0.mlp.c_fc.weight, transformer.h.1.mlp.c_fc.weight");
  // A sequence longer than the context, and a vocabulary smaller than the tokenizer's.
  std::string long_sequence = config("", 4);
  long_sequence.replace(long_sequence.find("batch_size: 4,"), 14, "batch_size: 4, max_sequence_length: 32,");
  // Its column follows the corpus path, which differs from run to run.
  const std::size_t column = long_sequence.find("max_sequence_length: 32") + 21 - long_sequence.find('\n');
  EXPECT_EQ(setup_error(long_sequence),
            fmt::format("test.yaml:2:{}: train_input.max_sequence_length: expected at most model.n_positions (16), got "
                        "32: the model has no position beyond its context; lower max_sequence_length or raise "
                        "model.n_positions",
                        column));
  std::string small_vocab = config("", 4);
  small_vocab.replace(small_vocab.find("n_embd: 16"), 10, "n_embd: 16, vocab_size: 100");
  EXPECT_EQ(setup_error(small_vocab),
            "test.yaml:1:84: model.vocab_size: 100 is smaller than the 257 ids of the byte tokenizer; give at least "
            "257, or leave vocab_size out to take them");
}

TEST_F(TrainerTest, ATrainingSectionOrItsMisspellingMakesAFileAWholeConfigElseASparsitySection) {
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(root_ / name) << text;
    return (root_ / name).string();
  };
  const std::string whole = write("whole.yaml", config("sparsity: {algorithm: static, sparsity: 0.5}", 4));
  const auto w = load_train_or_sparsity_file(whole);
  ASSERT_TRUE(std::holds_alternative<TrainConfig>(w));
  EXPECT_TRUE(std::get<TrainConfig>(w).is_gpt());
  EXPECT_EQ(std::get<TrainConfig>(w).sparsity.groups.size(), 1u);
  // The Model Zoo 2.4+ place, trainer.init.sparsity, in a whole config; nothing else of trainer.
  const std::string nested =
      write("nested.yaml", config("trainer: {init: {sparsity: {algorithm: static, sparsity: 0.5}}}", 4));
  const auto n = load_train_or_sparsity_file(nested);
  ASSERT_TRUE(std::holds_alternative<TrainConfig>(n));
  EXPECT_EQ(std::get<TrainConfig>(n).sparsity.groups.size(), 1u);
  const std::string more = write("more.yaml", config("trainer: {init: {sparsity: 0.5, seed: 1}}", 4));
  EXPECT_THAT(error_of([&] { load_train_or_sparsity_file(more); }),
              HasSubstr(more + ":5:33: trainer.init.seed: not read; a training config takes trainer.init.sparsity only "
                               "(the sparsity section)"));

  // Without `model:`, only the sparsity section is read.
  const std::string section = write("section.yaml", "sparsity: {algorithm: static, sparsity: 0.5}\nfoo: 1\n");
  const auto s = load_train_or_sparsity_file(section);
  ASSERT_TRUE(std::holds_alternative<SparsityConfig>(s));
  EXPECT_EQ(std::get<SparsityConfig>(s).groups.size(), 1u);

  // A whole config is read whole: a bad section is an error even when the sparsity one is fine.
  const std::string bad = write("bad.yaml", "model: {name: mlp}\nsparsity: 0.5\n");
  try {
    load_train_or_sparsity_file(bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(bad + ":1:1: missing section 'train_input'"));
  }
  // Any training section, or a misspelling close to one, makes the file a training config, so
  // `config --params` reports the typo instead of checking the sparsity section alone.
  const std::string typo = write("typo.yaml", "models: {name: mlp}\nsparsity: 0.5\n");
  EXPECT_THAT(error_of([&] { load_train_or_sparsity_file(typo); }),
              HasSubstr(typo + ":1:1: models: unknown section (did you mean 'model'?); a training config has model, "
                               "train_input, eval_input, optimizer, sparsity, runconfig and trainer"));
  const std::string no_model = write("no_model.yaml", "optimizer: {learning_rate: 0.1}\nsparsity: 0.5\n");
  EXPECT_THAT(error_of([&] { load_train_or_sparsity_file(no_model); }),
              HasSubstr(no_model + ":1:1: missing section 'model'"));
  // Text that is not YAML is reported, with its position, by the sparsity loader.
  const std::string broken = write("broken.yaml", "model: [\n");
  try {
    load_train_or_sparsity_file(broken);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(broken + ":"));
  }
  // A ',' outside a flow collection, on which yaml-cpp's LoadAll never returns, is an error too.
  const std::string comma = write("comma.yaml", "{model: {name: mlp}},\n");
  try {
    load_train_or_sparsity_file(comma);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), comma + ":1:21: unexpected ',' outside a flow collection ([...] or {...})");
  }
}

}  // namespace
}  // namespace sparsetrain
