// Crashes and faults while the real binary writes checkpoints: SIGKILL at pseudo-random moments
// and a file-size limit during a save. Whatever happens, every checkpoint the directory reports
// complete loads, no complete checkpoint is lost, and training again resumes from the newest one
// and removes what the interrupted save left.
//
// SPARSETRAIN_TEST_KILL_TRIALS=N sets the number of kills (default 40: 8-25 s on two busy
// cores); docs/reliability.md has the figures of long runs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "sparsetrain/io/safetensors.h"
#include "sparsetrain/train/checkpoint.h"
#include "sparsetrain/train/setup.h"
#include "unit/event_file_decoder.h"

namespace sparsetrain::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("sparsetrain-crash-{}-{}", ::getpid(),
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream text(root_ / "corpus.txt");
    for (int i = 0; i < 400; ++i) text << "the quick brown fox number " << i << " jumps over the lazy dog.\n";
    text.close();
    // A checkpoint after every step, masks that change every other step.
    params_ = (root_ / "params.yaml").string();
    std::ofstream(params_) << fmt::format(
        R"(model: {{name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 16}}
train_input: {{data: text_file, path: "{}", tokenizer: byte, batch_size: 4}}
optimizer: {{optimizer_type: adamw, learning_rate: 0.003}}
sparsity: {{algorithm: rigl, sparsity: 0.8, format: csr, update: {{freq: 2}}}}
runconfig: {{max_steps: 10, log_steps: 1, checkpoint_steps: 1, keep_checkpoints: 2, seed: 3}}
)",
        (root_ / "corpus.txt").string());
    dir_ = (root_ / "run").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  CliResult train(int64_t max_steps, const CliControl& control = {}) const {
    return run_cli_controlled(
        {"train", "--params", params_, "--model_dir", dir_, "--max_steps", std::to_string(max_steps), "--no-progress"},
        {"OMP_NUM_THREADS=1"}, control);
  }

  // The steps of the complete checkpoints, each checked: both files parse, and they load into a
  // model and optimizer built from the config.
  std::vector<int64_t> loadable_checkpoints() const {
    const std::vector<int64_t> steps = complete_checkpoints(dir_);
    for (int64_t step : steps) {
      SCOPED_TRACE(checkpoint_model_path(dir_, step));
      try {
        read_safetensors(checkpoint_model_path(dir_, step));
        read_safetensors(checkpoint_state_path(dir_, step));
        sparsetrain::Setup s = make_setup(load_train_config_file(params_), 3, /*load_data=*/false);
        const std::optional<TrainerState> state =
            load_checkpoint(checkpoint_model_path(dir_, step), *s.model, s.optimizer.get());
        EXPECT_EQ(state.has_value() ? state->progress.step : -1, step);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "a complete checkpoint does not load: " << e.what();
      }
    }
    return steps;
  }

  // Files in the model directory that are neither params.yaml (or an earlier one), metrics.jsonl, the event
  // files' train/ nor part of a complete checkpoint: what an interrupted save left.
  std::vector<std::string> leftovers() const {
    static const std::regex earlier_config(R"(params\.to_step_\d+\.yaml)");  // a resume with other --max_steps
    static const std::regex checkpoint_file(R"(checkpoint_(\d+)\.(safetensors|state\.safetensors|done))");
    const std::vector<int64_t> done = complete_checkpoints(dir_);
    std::vector<std::string> left;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name == "params.yaml" || name == "metrics.jsonl" || name == "run_environment.jsonl" || name == "train" ||
          std::regex_match(name, earlier_config))
        continue;
      std::smatch m;
      if (std::regex_match(name, m, checkpoint_file) &&
          std::find(done.begin(), done.end(), std::stoll(m[1].str())) != done.end())
        continue;
      left.push_back(name);
    }
    return left;
  }

  fs::path root_;
  std::string params_, dir_;
};

int kill_trials() {
  const char* text = std::getenv("SPARSETRAIN_TEST_KILL_TRIALS");
  return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : 40;
}

// SIGKILL while training with a checkpoint after every step: three in four kills come 0-30 ms
// after the run's first new checkpoint is complete (mostly inside a save: a step takes about a
// millisecond, a save a few), one in four 0-60 ms after the process starts (in its start-up,
// clean-up, resume or first steps).
TEST_F(CrashTest, KillNineAtRandomMomentsNeverLosesACompleteCheckpoint) {
  const int trials = kill_trials();
  std::mt19937 random(20261123);
  ASSERT_EQ(train(2).exit_code, 0);  // a complete checkpoint to lose from the start
  int64_t newest = 2;
  int interrupted_saves = 0;
  for (int trial = 0; trial < trials; ++trial) {
    SCOPED_TRACE(fmt::format("trial {} of {}", trial + 1, trials));
    const bool from_start = trial % 4 == 3;
    const auto delay = std::chrono::microseconds(
        std::uniform_int_distribution<int>(0, from_start ? 60000 : 30000)(random));
    const std::string first_new_marker = (fs::path(dir_) / fmt::format("checkpoint_{}.done", newest + 1)).string();
    CliControl control;
    control.while_running = [&](pid_t pid) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      struct stat st {};
      while (!from_start && ::stat(first_new_marker.c_str(), &st) != 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::this_thread::sleep_for(delay);
      ::kill(pid, SIGKILL);
    };
    const CliResult killed = train(1000000, control);
    ASSERT_EQ(killed.exit_code, -1) << "not killed:\n" << killed.out << killed.err;

    const std::vector<int64_t> done = loadable_checkpoints();
    ASSERT_FALSE(done.empty()) << "every complete checkpoint is gone";
    // The newest complete checkpoint before the kill is still there, or two newer ones are.
    const bool kept = std::find(done.begin(), done.end(), newest) != done.end();
    ASSERT_TRUE(kept || (done.size() >= 2 && done.front() > newest))
        << "checkpoint " << newest << " lost; complete now: " << fmt::format("{}", fmt::join(done, ", "));
    const std::vector<std::string> left = leftovers();
    interrupted_saves += left.empty() ? 0 : 1;

    const CliResult resumed = train(done.back() + 1);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    const std::string from = checkpoint_model_path(dir_, done.back());
    EXPECT_TRUE(contains(resumed.out, fmt::format("resuming from {} (step {})", from, done.back()))) << resumed.out;
    EXPECT_EQ(contains(resumed.out, "removed the leftovers of an interrupted save"), !left.empty())
        << fmt::format("left: {}\n", fmt::join(left, ", ")) << resumed.out;
    const std::vector<std::string> after = leftovers();
    EXPECT_TRUE(after.empty()) << fmt::format("{}", fmt::join(after, ", "));
    newest = done.back() + 1;
    ASSERT_EQ(complete_checkpoints(dir_).back(), newest);
  }
  // The metrics read as one run: a train row for every step, once, in order.
  std::ifstream in(fs::path(dir_) / "metrics.jsonl");
  int64_t expected = 1;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row["split"] != "train") continue;
    ASSERT_EQ(row["step"], expected++);
  }
  EXPECT_EQ(expected, newest + 1);
  // So do the event files, decoded independently: one loss a step, once, in order, as in the metrics.
  std::vector<int64_t> steps;
  for (const fs::path& file : event_files(fs::path(dir_) / "train"))
    for (const DecodedEvent& e : decode_event_file(file))
      if (e.file_version.empty()) steps.push_back(e.step);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(newest));
  for (int64_t step = 1; step <= newest; ++step) ASSERT_EQ(steps[static_cast<std::size_t>(step - 1)], step);
  RecordProperty("kill_trials", trials);
  RecordProperty("interrupted_saves", interrupted_saves);
  std::printf("kill -9: %d of %d trials survived; %d kills left an interrupted save behind; %lld steps\n", trials,
              trials, interrupted_saves, static_cast<long long>(newest));
}

// A file-size limit (ulimit -f) smaller than a checkpoint file: the write fails with EFBIG, the
// run exits 1 naming the file and the reason, the older checkpoints stay complete and loadable,
// nothing partial is left, and without the limit the run resumes.
TEST_F(CrashTest, AFileSizeLimitDuringASaveIsAnErrorThatKeepsOlderCheckpoints) {
  ASSERT_EQ(train(2).exit_code, 0);
  ASSERT_EQ(loadable_checkpoints(), (std::vector<int64_t>{1, 2}));
  const uint64_t model_bytes = fs::file_size(checkpoint_model_path(dir_, 2));
  const uint64_t state_bytes = fs::file_size(checkpoint_state_path(dir_, 2));
  const uint64_t limit = std::max(model_bytes, state_bytes) / 2;
  const std::string failing = model_bytes > limit ? checkpoint_model_path(dir_, 3) : checkpoint_state_path(dir_, 3);

  CliControl control;
  control.file_size_limit = limit;
  const CliResult r = train(5, control);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "sparsetrain: error: " + failing + ": cannot write the temporary file '" + failing +
                                  ".tmp-"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "File too large")) << r.err;
  EXPECT_EQ(loadable_checkpoints(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(leftovers().empty()) << fmt::format("{}", fmt::join(leftovers(), ", "));

  const CliResult resumed = train(5);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.out, "(step 2)")) << resumed.out;
  EXPECT_EQ(loadable_checkpoints(), (std::vector<int64_t>{4, 5}));
}

}  // namespace
}  // namespace sparsetrain::testing
