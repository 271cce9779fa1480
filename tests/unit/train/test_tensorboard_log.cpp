// The trainer's TensorBoard event files, read back by an independent decoder: they hold the
// values of metrics.jsonl under the documented tags; a resumed run, even over a record cut short
// by a killed run, neither repeats a step nor goes back; the switch turns them off without
// changing a checkpoint bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "event_file_decoder.h"
#include "sparsetrain/io/tfrecord.h"
#include "sparsetrain/train/checkpoint.h"
#include "trainer_test.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two sparsity groups, so that each gets its own tag.
constexpr const char* kTwoGroups =
    "sparsity: [{algorithm: static, sparsity: 0.5, param_filter: \"*attn.c_attn.weight\"}, "
    "{algorithm: static, sparsity: 0.8, param_filter: \"*mlp.c_fc.weight\"}]";

std::vector<nlohmann::json> rows(const fs::path& dir, const std::string& split) {
  std::ifstream in(dir / "metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    const auto row = nlohmann::json::parse(line);
    if (row["split"] == split) out.push_back(row);
  }
  return out;
}

// Every scalar of the event files of `dir`, in TensorBoard's reading order; each file must start
// with its version record.
std::vector<testing::DecodedEvent> events(const fs::path& dir) {
  std::vector<testing::DecodedEvent> all;
  for (const fs::path& file : testing::event_files(dir)) {
    const std::vector<testing::DecodedEvent> in_file = testing::decode_event_file(file);
    EXPECT_FALSE(in_file.empty()) << file;
    if (in_file.empty()) continue;
    EXPECT_EQ(in_file[0].file_version, "brain.Event:2") << file;
    all.insert(all.end(), in_file.begin() + 1, in_file.end());
  }
  return all;
}

// tag -> step -> value; fails on a step that repeats or goes back for its tag.
std::map<std::string, std::map<int64_t, float>> by_tag(const std::vector<testing::DecodedEvent>& all) {
  std::map<std::string, std::map<int64_t, float>> tags;
  for (const testing::DecodedEvent& e : all)
    for (const auto& [tag, value] : e.values) {
      std::map<int64_t, float>& steps = tags[tag];
      EXPECT_TRUE(steps.empty() || steps.rbegin()->first < e.step)
          << tag << ": step " << e.step << " after step " << steps.rbegin()->first;
      steps[e.step] = value;
    }
  return tags;
}

// The rows of `split` are the events, key by key, under the documented tags.
void expect_events_hold_rows(const fs::path& dir, const std::string& split,
                             const std::map<std::string, std::string>& tag_of) {
  const auto tags = by_tag(events(dir / split));
  const std::vector<nlohmann::json> expected = rows(dir, split);
  ASSERT_FALSE(expected.empty());
  for (const auto& [key, tag] : tag_of) {
    SCOPED_TRACE(split + " " + key + " as " + tag);
    ASSERT_TRUE(tags.contains(tag));
    std::map<int64_t, float> want;
    for (const nlohmann::json& row : expected) want[row["step"].get<int64_t>()] = row[key].get<float>();
    EXPECT_EQ(tags.at(tag), want);
  }
}

TEST_F(TrainerTest, EventFilesHoldTheMetricsAndAResumeNeitherRepeatsNorGoesBack) {
  const fs::path dir = root_ / "run";
  const std::string run = ", eval_frequency: 4";
  ASSERT_EQ(train(config(kTwoGroups, 10, run), dir), 0);  // rows at 3, 6, 9, 10; evals at 4, 8
  // A run killed while saving step 10 and while writing an event: the newest complete checkpoint
  // is step 8, and the last record of the train event file is cut short.
  fs::remove(dir / "checkpoint_10.done");
  const fs::path first = testing::event_files(dir / "train").at(0);
  const std::string half = tfrecord_frame("an event being written").substr(0, 17);
  std::ofstream(first, std::ios::binary | std::ios::app) << half;

  ASSERT_EQ(train(config(kTwoGroups, 12, run), dir), 0);  // resumes from 8: rows at 9, 12; eval at 12
  EXPECT_EQ(testing::event_files(dir / "train").size(), 2u) << "the resumed run writes a file of its own";
  std::vector<int64_t> steps;
  for (const testing::DecodedEvent& e : events(dir / "train")) steps.push_back(e.step);
  EXPECT_THAT(steps, ElementsAre(3, 6, 9, 12));
  steps.clear();
  for (const testing::DecodedEvent& e : events(dir / "eval")) steps.push_back(e.step);
  EXPECT_THAT(steps, ElementsAre(4, 8, 12));

  expect_events_hold_rows(dir, "train",
                          {{"loss", "loss"},
                           {"lr", "lr.0"},
                           {"grad_norm", "model_wise_grad_norm"},
                           {"sparsity", "sparsity"},
                           {"tokens_per_s", "local_tokens_per_sec"},
                           {"ms_per_step", "ms_per_step"},
                           {"flops_dense", "flops_dense"},
                           {"flops_actual", "flops_actual"},
                           {"skipped", "skipped"},
                           {"loss_spikes", "loss_spikes"}});
  expect_events_hold_rows(dir, "eval", {{"loss", "loss"}, {"perplexity", "eval/lm_perplexity"}});
  // Each group at its own level (the counts round, so not exactly 0.5 and 0.8).
  const auto tags = by_tag(events(dir / "train"));
  for (const auto& [tag, level] : {std::pair{"sparsity/group_1", 0.5f}, {"sparsity/group_2", 0.8f}}) {
    ASSERT_TRUE(tags.contains(tag)) << tag;
    for (const auto& [step, value] : tags.at(tag)) EXPECT_NEAR(value, level, 0.01f) << tag << " at " << step;
  }
}

// Evaluation alone adds its row to eval/ at the checkpoint's step.
TEST_F(TrainerTest, EvaluationAloneWritesAnEvalEvent) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 4), dir), 0);
  EXPECT_FALSE(fs::exists(dir / "eval")) << "no evaluation, no eval event file";
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(train(config("", 4), dir, RunMode::Eval), 0);
  ::testing::internal::GetCapturedStdout();
  const std::vector<testing::DecodedEvent> eval = events(dir / "eval");
  ASSERT_EQ(eval.size(), 1u);
  EXPECT_EQ(eval[0].step, 4);
  expect_events_hold_rows(dir, "eval", {{"loss", "loss"}, {"perplexity", "eval/lm_perplexity"}});
}

// runconfig.tensorboard: false writes no event file, and the event files never change what is
// trained: the checkpoints of both runs are the same bytes.
TEST_F(TrainerTest, TheSwitchTurnsEventFilesOffAndCheckpointsStayTheSame) {
  const fs::path on = root_ / "on", off = root_ / "off";
  ASSERT_EQ(train(config(kTwoGroups, 6), on), 0);
  ASSERT_EQ(train(config(kTwoGroups, 6, ", tensorboard: false"), off), 0);
  EXPECT_FALSE(fs::exists(off / "train"));
  EXPECT_FALSE(fs::exists(off / "eval"));
  EXPECT_EQ(testing::event_files(on / "train").size(), 1u);
  EXPECT_EQ(bytes(checkpoint_model_path(on.string(), 6)), bytes(checkpoint_model_path(off.string(), 6)));
  EXPECT_EQ(bytes(checkpoint_state_path(on.string(), 6)), bytes(checkpoint_state_path(off.string(), 6)));
}

// A part of a run with the switch off still cuts the event files of the part before it at its
// resume step, so that a later part with the switch on again neither repeats a step nor goes back.
TEST_F(TrainerTest, AResumeWithTheSwitchOffStillCutsTheEventFiles) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 8), dir), 0);                          // rows at 3, 6, 8; checkpoints at 4, 8
  fs::remove(dir / "checkpoint_8.done");                            // killed while saving step 8
  ASSERT_EQ(train(config("", 8, ", tensorboard: false"), dir), 0);  // resumes from 4, no events
  ASSERT_EQ(train(config("", 12), dir), 0);                         // resumes from 8, events again
  std::vector<int64_t> steps;
  for (const testing::DecodedEvent& e : events(dir / "train")) steps.push_back(e.step);
  EXPECT_THAT(steps, ElementsAre(3, 9, 12));
}

// A damaged record (bits flipped on disk) in an event file a resume must cut: the run says which
// file and byte, cuts the file there and goes on.
TEST_F(TrainerTest, AResumeCutsADamagedEventFileSayingWhere) {
  const fs::path dir = root_ / "run";
  ASSERT_EQ(train(config("", 6), dir), 0);  // rows at 3, 6
  const fs::path file = testing::event_files(dir / "train").at(0);
  std::string bytes = read_file(file.string());
  const std::size_t last = read_tfrecords(bytes).records.back().offset;
  bytes[last + 20] ^= 0x01;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(train(config("", 9), dir), 0);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(),
              HasSubstr(file.string() + ": the record at byte " + std::to_string(last) + " is damaged"));
  std::vector<int64_t> steps;
  for (const testing::DecodedEvent& e : events(dir / "train")) steps.push_back(e.step);
  EXPECT_THAT(steps, ElementsAre(3, 9));  // 6 was the damaged record
}

}  // namespace
}  // namespace sparsetrain
