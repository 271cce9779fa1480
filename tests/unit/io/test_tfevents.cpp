// TensorBoard event files: CRC-32C against published vectors, TFRecord frames against golden
// records, the writer's files read back by an independent decoder (protoc --decode_raw), and
// the cut a resumed run makes, on whole, cut-short and damaged records.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "event_file_decoder.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/crc32c.h"
#include "sparsetrain/io/event_file.h"
#include "sparsetrain/io/tfrecord.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

std::string hex(const std::string& hex_digits) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex_digits.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(hex_digits.substr(i, 2), nullptr, 16)));
  return bytes;
}

TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283U);  // the CRC catalogue's check value
  EXPECT_EQ(crc32c(""), 0U);
  // RFC 3720 (iSCSI), B.4: 32 bytes of zeros, of ones, and ascending 0..31.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAU);
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43U);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(crc32c(ascending), 0x46DD794EU);
}

TEST(Crc32c, TableMatchesTheBitwiseDefinitionOnRandomBytes) {
  std::mt19937 rng(7);
  for (int n = 0; n < 300; n += 7) {
    std::string bytes;
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<char>(rng() & 0xFF));
    EXPECT_EQ(crc32c(bytes), testing::bitwise_crc32c(bytes)) << n << " bytes";
    EXPECT_EQ(masked_crc32c(bytes), testing::bitwise_masked_crc32c(bytes)) << n << " bytes";
  }
}

// Frames written by hand from the schema: Event{wall_time 1.5, file_version "brain.Event:2"}, and
// Event{wall_time 1.5, step 1, summary {value {tag "loss", simple_value 2}}}.
TEST(TfRecord, FramesMatchGoldenRecords) {
  const std::string version = hex("09000000000000f83f1a0d") + "brain.Event:2";
  EXPECT_EQ(file_version_event(1.5), version);
  EXPECT_EQ(tfrecord_frame(version), hex("1800000000000000a37f4b22") + version + hex("2a28646c"));
  const std::string loss = hex("09000000000000f83f10012a0d0a0b0a04") + "loss" + hex("1500000040");
  EXPECT_EQ(scalars_event(1.5, 1, {{"loss", 2.0f}}), loss);
  EXPECT_EQ(tfrecord_frame(loss), hex("1a00000000000000129bd82d") + loss + hex("2ed115ed"));
}

TEST(TfRecord, ReadingStopsAtARecordCutShortOrFailingItsCrc) {
  const std::string a = tfrecord_frame("first"), b = tfrecord_frame("second");
  const std::string both = a + b;  // the records are views into it
  TfRecords whole = read_tfrecords(both);
  ASSERT_EQ(whole.records.size(), 2u);
  EXPECT_EQ(whole.records[1].data, "second");
  EXPECT_EQ(whole.records[1].offset, a.size());
  EXPECT_EQ(whole.problem, "");

  for (std::size_t cut = 1; cut < b.size(); ++cut) {
    const std::string bytes = a + b.substr(0, cut);
    const TfRecords r = read_tfrecords(bytes);
    ASSERT_EQ(r.records.size(), 1u) << cut;
    EXPECT_EQ(r.end, a.size());
    EXPECT_TRUE(r.cut_short) << cut;
  }
  std::string bad_data = a + b;
  bad_data[a.size() + 13] ^= 0x01;
  TfRecords r = read_tfrecords(bad_data);
  EXPECT_EQ(r.records.size(), 1u);
  EXPECT_FALSE(r.cut_short);
  EXPECT_EQ(r.problem, "the CRC of the record's data does not match");
  std::string bad_length = a + b;
  bad_length[a.size()] ^= 0x40;
  r = read_tfrecords(bad_length);
  EXPECT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.problem, "the CRC of the record's length does not match");
}

TEST(EventFileWriter, WritesAVersionRecordThenOneEventPerStepThatProtocDecodes) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "train";
  {
    EventFileWriter w(dir.string());
    EXPECT_FALSE(fs::exists(dir)) << "nothing is created before the first event";
    w.write(10, {{"loss", 2.5f}, {"sparsity", 0.0f}, {"lr.0", 3e-3f}});
    w.write(20, {{"loss", 1.25f}, {"sparsity", 0.9f}, {"lr.0", 1e-3f}});
  }
  EventFileWriter second(dir.string());  // the same process: a file of its own, sorting after
  second.write(30, {{"loss", 1.0f}});
  const std::vector<fs::path> files = testing::event_files(dir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_TRUE(files[0].filename().string().ends_with(".0"));
  EXPECT_EQ(testing::decode_event_file(files[1]).back().step, 30);

  const std::vector<testing::DecodedEvent> events = testing::decode_event_file(files[0]);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.7e9);  // seconds since 1970, after 2023
  EXPECT_EQ(events[1].step, 10);
  EXPECT_EQ(events[1].values,
            (std::vector<std::pair<std::string, float>>{{"loss", 2.5f}, {"sparsity", 0.0f}, {"lr.0", 3e-3f}}));
  EXPECT_EQ(events[2].step, 20);
  EXPECT_EQ(events[2].values[1], (std::pair<std::string, float>{"sparsity", 0.9f}));
  EXPECT_GE(events[2].wall_time, events[1].wall_time);
}

// Readers take a directory's event files in name order. A resumed run's file must come after
// the files of the runs before it even where its Unix seconds and pid alone would sort it first:
// a predecessor started in the same second by a pid that sorts higher as text (99999 > 100000),
// or a clock that went back.
TEST(EventFileWriter, ANewFileSortsAfterEveryEarlierFile) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "train";
  EventFileWriter(dir.string()).write(1, {{"loss", 1.0f}});
  const fs::path first = testing::event_files(dir).at(0);
  // events.out.tfevents.<seconds>.<host>.<pid>.0
  const std::string name = first.filename().string();
  const std::size_t seconds_at = std::strlen("events.out.tfevents.");
  const std::size_t seconds_end = name.find('.', seconds_at);
  const int64_t seconds = std::stoll(name.substr(seconds_at, seconds_end - seconds_at));
  const std::string host = name.substr(seconds_end + 1, name.find('.', seconds_end + 1) - seconds_end - 1);
  for (const auto& [later_seconds, pid] :
       {std::pair<int64_t, std::string>{seconds, "99999999"}, std::pair<int64_t, std::string>{seconds + 100, "2"}}) {
    const fs::path earlier = dir / fmt::format("events.out.tfevents.{}.{}.{}.0", later_seconds, host, pid);
    fs::copy_file(first, earlier);
    EventFileWriter(dir.string()).write(2, {{"loss", 2.0f}});
    const std::vector<fs::path> files = testing::event_files(dir);
    ASSERT_EQ(testing::decode_event_file(files.back()).back().step, 2) << files.back();
    EXPECT_EQ(files.back().filename().string(),
              fmt::format("events.out.tfevents.{}.{}.{}.0", later_seconds + 1, host, ::getpid()));
    fs::remove(files.back());
  }
  // Names of another form are no reason to change the seconds, and one that no seconds can sort
  // after (11 digits) is tried once, not for ever.
  for (const char* stranger : {"events.out.tfevents.zzz", "events.out.tfevents.99999999999.host.1.0"}) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / stranger);
    EventFileWriter(dir.string()).write(3, {{"loss", 3.0f}});
    const std::vector<fs::path> files = testing::event_files(dir);
    ASSERT_EQ(files.size(), 2u) << stranger;
    EXPECT_EQ(testing::decode_event_file(files.front()).back().step, 3) << stranger;
  }
}

class CutEventFiles : public ::testing::Test {
 protected:
  // A file of steps 10, 20, 30, 40 in a new directory `name`; returns its path.
  fs::path write_run(const std::string& name = "train") {
    EventFileWriter w((tmp_.path() / name).string());
    for (int64_t step = 10; step <= 40; step += 10) w.write(step, {{"loss", static_cast<float>(step)}});
    return testing::event_files(tmp_.path() / name).at(0);
  }
  static std::vector<int64_t> steps(const fs::path& file) {
    std::vector<int64_t> s;
    for (const testing::DecodedEvent& e : testing::decode_event_file(file)) s.push_back(e.step);
    return s;
  }
  static void truncate(const fs::path& file, std::size_t bytes_off) {
    fs::resize_file(file, fs::file_size(file) - bytes_off);
  }
  TempDir tmp_;
};

TEST_F(CutEventFiles, RecordsAfterTheResumedStepAreCut) {
  const fs::path file = write_run();
  EXPECT_THAT(cut_event_files(file.parent_path().string(), 25), ElementsAre());
  EXPECT_THAT(steps(file), ElementsAre(0, 10, 20));  // 0: the version record
  EXPECT_THAT(cut_event_files(file.parent_path().string(), 20), ElementsAre());
  EXPECT_THAT(steps(file), ElementsAre(0, 10, 20));
  EXPECT_THAT(cut_event_files((tmp_.path() / "no such directory").string(), 0), ElementsAre());
}

// A run killed while writing a record leaves it cut short: the cut drops it without a word.
TEST_F(CutEventFiles, ARecordCutShortByAKilledRunIsDropped) {
  for (const std::size_t missing : {1, 5, 20}) {
    const fs::path file = write_run("killed-" + std::to_string(missing));
    truncate(file, missing);
    EXPECT_THAT(cut_event_files(file.parent_path().string(), 100), ElementsAre());
    EXPECT_THAT(steps(file), ElementsAre(0, 10, 20, 30)) << missing << " bytes missing";
  }
}

// A damaged record (its CRC does not match: bits flipped on disk) cuts the file there, and says
// where.
TEST_F(CutEventFiles, ADamagedRecordIsCutAndNamedWithItsOffset) {
  const fs::path file = write_run();
  std::string bytes = read_file(file.string());
  const std::size_t last = read_tfrecords(bytes).records.back().offset;
  bytes[last + 14] ^= 0x10;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT(cut_event_files(file.parent_path().string(), 100),
              ElementsAre(file.string() + ": the record at byte " + std::to_string(last) +
                          " is damaged (the CRC of the record's data does not match); the file is cut there"));
  EXPECT_THAT(steps(file), ElementsAre(0, 10, 20, 30));
}

TEST_F(CutEventFiles, AFileThatIsNotAnEventFileIsCutToNothing) {
  const fs::path file = tmp_.write("events.out.tfevents.1.host.1.0", "not an event file at all");
  const std::vector<std::string> said = cut_event_files(tmp_.path().string(), 100);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0], HasSubstr("events.out.tfevents.1.host.1.0: the record at byte 0 is damaged"));
  EXPECT_EQ(fs::file_size(file), 0u);
}

}  // namespace
}  // namespace sparsetrain
