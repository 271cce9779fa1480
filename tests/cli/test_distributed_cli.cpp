// `mpirun -np N sparsetrain ...` as a user runs it: a run resumes bit-identically at the same
// rank count and completes at another one (or without mpirun); ranks that read different configs
// fail at start with one message and exit code 5; a rank killed with SIGKILL ends the job and the
// same command then resumes from the last complete checkpoint, ending where an unbroken run ends;
// bench train reports what the gradient all-reduce moved.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/train/checkpoint.h"
#include "tiny_gpt_run.h"

namespace sparsetrain::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Open MPI refuses to run as root (as CI does) without these.
const std::vector<std::string> kEnv = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                       "OMP_NUM_THREADS=1"};

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class DistributedCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("sparsetrain-mpi-{}-{}", ::getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    make_tiny_corpus_dir(root_);
    params_ = write_config("params.yaml", 0.003);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A tiny GPT, RigL at 80% in CSR (masks change every 3 steps), a global batch of 6, a checkpoint
  // every 2 steps.
  std::string write_config(const std::string& name, double learning_rate, int batch = 6) const {
    const std::string path = (root_ / name).string();
    std::ofstream(path) << fmt::format(
        R"(model: {{name: gpt, n_positions: 16, n_layer: 2, n_head: 2, n_embd: 32}}
train_input: {{data: text_file, path: "{}", tokenizer: byte, batch_size: {}}}
optimizer: {{optimizer_type: adamw, learning_rate: {}, max_gradient_norm: 1.0}}
sparsity: {{algorithm: rigl, sparsity: 0.8, format: csr, update: {{freq: 3}}, drop_fraction: 0.3}}
runconfig: {{max_steps: 12, log_steps: 1, checkpoint_steps: 2, keep_checkpoints: 10, seed: 3}}
)",
        (root_ / "corpus.txt").string(), batch, learning_rate);
    return path;
  }

  // mpirun -np `ranks` sparsetrain `args` (ranks 0: sparsetrain alone).
  static CliResult mpirun(int ranks, const std::vector<std::string>& args, const CliControl& given = {}) {
    if (ranks == 0) return run_cli_controlled(args, kEnv, given);
    CliControl control = given;
    control.program = SPARSETRAIN_MPIEXEC;
    std::vector<std::string> all = {"-np", std::to_string(ranks), "--oversubscribe", SPARSETRAIN_EXE};
    all.insert(all.end(), args.begin(), args.end());
    return run_cli_controlled(all, kEnv, control);
  }
  std::vector<std::string> train(const fs::path& dir, int64_t steps) const {
    return {"train",     "--params", params_, "--model_dir", dir.string(), "--max_steps", std::to_string(steps),
            "--threads", "1"};
  }
  static std::string model_at(const fs::path& dir, int64_t step) {
    return read_file(checkpoint_model_path(dir.string(), step));
  }
  // The loss of each train row of metrics.jsonl, by step.
  static std::vector<double> losses(const fs::path& dir) {
    std::vector<double> out;
    std::istringstream in(read_file((dir / "metrics.jsonl").string()));
    for (std::string line; std::getline(in, line);) {
      const json row = json::parse(line);
      if (row["split"] == "train") out.push_back(row["loss"].get<double>());
    }
    return out;
  }

  fs::path root_;
  std::string params_;
};

TEST_F(DistributedCliTest, ResumesBitIdenticallyAtTheSameRankCountAndCompletesAtOthers) {
  const fs::path whole = root_ / "whole", parts = root_ / "parts", three = root_ / "three", alone = root_ / "alone";
  const CliResult w = mpirun(2, train(whole, 12));
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err;
  EXPECT_NE(w.out.find("on 2 ranks x 1 thread"), std::string::npos) << w.out;
  EXPECT_EQ(count(w.out, "step     12/12"), 1u) << "rank 0 alone prints: " << w.out;

  ASSERT_EQ(mpirun(2, train(parts, 6)).exit_code, 0);
  const CliResult resumed = mpirun(2, train(parts, 12));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("training steps 7 to 12"), std::string::npos) << resumed.out;
  EXPECT_EQ(model_at(whole, 12), model_at(parts, 12));
  EXPECT_EQ(read_file(checkpoint_state_path(whole.string(), 12)), read_file(checkpoint_state_path(parts.string(), 12)));

  // Another rank count (same global batch) goes on from the 2-rank checkpoint, and says the run
  // is no longer bit-identical to one that did not stop.
  ASSERT_EQ(mpirun(2, train(three, 6)).exit_code, 0);
  const CliResult on3 = mpirun(3, train(three, 12));
  ASSERT_EQ(on3.exit_code, 0) << on3.err;
  EXPECT_NE(on3.out.find("training steps 7 to 12 on 3 ranks"), std::string::npos) << on3.out;
  EXPECT_NE(on3.out.find("ranks 2 -> 3"), std::string::npos) << on3.out;
  ASSERT_EQ(mpirun(2, train(alone, 6)).exit_code, 0);
  const CliResult on1 = mpirun(0, train(alone, 12));
  ASSERT_EQ(on1.exit_code, 0) << on1.err;
  EXPECT_NE(on1.out.find("ranks 2 -> 1"), std::string::npos) << on1.out;

  // Evaluation is spread over the ranks and summed: the loss of one process, printed once.
  const CliResult eval2 = mpirun(3, {"eval", "--model_dir", whole.string(), "--threads", "1"});
  const CliResult eval1 = mpirun(0, {"eval", "--model_dir", whole.string(), "--threads", "1"});
  ASSERT_EQ(eval2.exit_code, 0) << eval2.err;
  ASSERT_EQ(eval1.exit_code, 0) << eval1.err;
  EXPECT_EQ(count(eval2.out, "eval step 12: loss "), 1u) << eval2.out;
  EXPECT_EQ(count(eval2.err, "sparsetrain: note: no --params given"), 1u) << "rank 0 alone notes: " << eval2.err;
  EXPECT_EQ(eval2.out.substr(eval2.out.find("eval step 12")), eval1.out.substr(eval1.out.find("eval step 12")));

  const std::vector<double> reference = losses(whole);
  ASSERT_EQ(reference.size(), 12u);
  for (const fs::path& dir : {three, alone}) {
    const std::vector<double> l = losses(dir);
    ASSERT_EQ(l.size(), 12u) << dir;
    for (std::size_t k = 0; k < 6; ++k) EXPECT_EQ(l[k], reference[k]) << dir << " step " << k + 1;
    for (std::size_t k = 6; k < 12; ++k)
      EXPECT_NEAR(l[k], reference[k], 1e-3 * reference[k]) << dir << " step " << k + 1;
  }
}

TEST_F(DistributedCliTest, RanksWithDifferentConfigsFailAtStartWithOneMessage) {
  const std::string other = write_config("other.yaml", 0.002);
  const std::string dir = (root_ / "run").string();
  CliControl control;
  control.program = SPARSETRAIN_MPIEXEC;
  // One mpirun, two programs (Open MPI's MPMD form): rank 1 reads another config.
  const CliResult r =
      run_cli_controlled({"-np", "1", SPARSETRAIN_EXE, "train", "--params", params_, "--model_dir", dir, ":", "-np",
                          "1", SPARSETRAIN_EXE, "train", "--params", other, "--model_dir", dir},
                         kEnv, control);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(count(r.err, "sparsetrain: error: the ranks of this run differ from rank 0"), 1u) << r.err;
  EXPECT_NE(r.err.find("rank 1: the config"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "checkpoint_12.done"));

  // Another kernel ISA on one rank (as on a host of another CPU kind) would round differently.
  const CliResult isa =
      run_cli_controlled({"-np", "1", SPARSETRAIN_EXE, "train", "--params", params_, "--model_dir", dir, ":", "-np",
                          "1", SPARSETRAIN_EXE, "--max-isa", "ref", "train", "--params", params_, "--model_dir", dir},
                         kEnv, control);
  EXPECT_EQ(isa.exit_code, 5) << isa.err;
  EXPECT_NE(isa.err.find("rank 1: the instruction sets the kernels and oneDNN run"), std::string::npos) << isa.err;
  EXPECT_EQ(isa.err.find("the config"), std::string::npos) << isa.err;
}

TEST_F(DistributedCliTest, AnErrorOnOneRankEndsTheJobWithThatRanksMessage) {
  const std::string missing = (root_ / "missing.yaml").string();
  CliControl control;
  control.program = SPARSETRAIN_MPIEXEC;
  const CliResult r = run_cli_controlled(
      {"-np", "1", SPARSETRAIN_EXE, "train", "--params", params_, "--model_dir", (root_ / "run").string(), ":", "-np",
       "1", SPARSETRAIN_EXE, "train", "--params", missing, "--model_dir", (root_ / "run").string()},
      kEnv, control);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("sparsetrain (rank 1 of 2): error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_ / "run" / "checkpoint_12.done"));
}

TEST_F(DistributedCliTest, ABatchSmallerThanTheRanksIsAnError) {
  const std::string small = write_config("small.yaml", 0.003, 2);
  const CliResult r = mpirun(3, {"train", "--params", small, "--model_dir", (root_ / "run").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("train_input.batch_size: a batch of 2 cannot be split over 3 ranks"), std::string::npos)
      << r.err;
}

// The process ids of `parent`'s children (mpirun's ranks).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

TEST_F(DistributedCliTest, AKilledRankEndsTheJobAndTheSameCommandResumes) {
  const fs::path whole = root_ / "whole", killed = root_ / "killed";
  ASSERT_EQ(mpirun(2, train(whole, 12)).exit_code, 0);
  CliControl control;
  control.while_running = [&](pid_t mpirun_pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(killed / "checkpoint_4.done") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<pid_t> ranks;
    while (ranks.size() < 2 && std::chrono::steady_clock::now() < deadline) ranks = children_of(mpirun_pid);
    ASSERT_EQ(ranks.size(), 2u);
    kill(ranks.back(), SIGKILL);
  };
  const CliResult broken = mpirun(2, train(killed, 12), control);
  EXPECT_NE(broken.exit_code, 0) << broken.out;
  EXPECT_FALSE(fs::exists(killed / "checkpoint_12.done")) << "the job went on without a rank";
  const CliResult again = mpirun(2, train(killed, 12));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("training steps "), std::string::npos);
  EXPECT_EQ(again.out.find("training steps 1 to"), std::string::npos) << "resumed, not restarted: " << again.out;
  EXPECT_EQ(model_at(whole, 12), model_at(killed, 12));
}

TEST_F(DistributedCliTest, BenchTrainReportsTheAllReduce) {
  const CliResult r =
      mpirun(2, {"bench", "train", "--params", params_, "--steps", "2", "--warmup", "1", "--threads", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(count(r.out, "\n"), 1u) << "one result, from rank 0: " << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["ranks"], 2);
  EXPECT_EQ(j["predictions_per_step"].get<double>(), 6 * 16);
  // The compressed layers send their kept values: 20% of their dense gradients.
  EXPECT_NEAR(j["sparse_layers_allreduce_ratio"].get<double>(), 0.2, 0.01);
  EXPECT_LT(j["sparse_allreduce_mb_per_step"].get<double>(), j["dense_allreduce_mb_per_step"].get<double>());
  EXPECT_GE(j["dense_comm_wait_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["dense_allreduce"]["wait_ms_per_step"].size(), 2u);
}

}  // namespace
}  // namespace sparsetrain::testing
