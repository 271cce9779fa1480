#include "sparsetrain/io/event_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/atomic_file.h"
#include "sparsetrain/io/tfevents.pb.h"
#include "sparsetrain/io/tfrecord.h"

namespace sparsetrain {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "events.out.tfevents.";

std::string serialized(const tfevents::Event& event) {
  std::string bytes;
  if (!event.SerializeToString(&bytes)) fail("tfevents: cannot serialize an event");
  return bytes;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::string file_version_event(double wall_time) {
  tfevents::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return serialized(event);
}

std::string scalars_event(double wall_time, int64_t step, const Scalars& scalars) {
  tfevents::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tfevents::Summary* summary = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    tfevents::SummaryValue* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(value);
  }
  return serialized(event);
}

EventFileWriter::EventFileWriter(std::string dir) : dir_(std::move(dir)) {}

EventFileWriter::~EventFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void EventFileWriter::write(int64_t step, const Scalars& scalars) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (file_ == nullptr) {
    create_output_directory(dir_, "the event file directory");
    open_new_file(static_cast<int64_t>(now));
    append(file_version_event(now));
  }
  append(scalars_event(now, step, scalars));
}

// TensorBoard, like every reader here, takes a directory's event files in the order of their
// names, so a new file's name must sort after the earlier runs' files. The Unix seconds in it do
// not ensure that on their own: a run resumed within the second its killed predecessor started
// has the same seconds, and its pid may sort lower as text (10000 < 9999) or be smaller (pids
// wrap). Then the seconds are taken one past the newest file's.
void EventFileWriter::open_new_file(int64_t seconds) {
  std::string newest;
  int64_t newest_seconds = -1;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(kPrefix)) continue;
    const char* first = name.data() + std::strlen(kPrefix);
    int64_t s = 0;
    const auto [end, error] = std::from_chars(first, name.data() + name.size(), s);
    // Only names of this form can be sorted after by choosing the seconds.
    if (error != std::errc() || end == first || *end != '.' || name <= newest) continue;
    newest = name;
    newest_seconds = s;
  }
  const std::string host = host_name();
  const auto unused_name = [&](int64_t s) {
    const std::string stem = fmt::format("{}{}.{}.{}", kPrefix, s, host, ::getpid());
    int n = 0;
    while (fs::exists(fs::path(dir_) / fmt::format("{}.{}", stem, n))) ++n;
    return fmt::format("{}.{}", stem, n);
  };
  // One past the newest seconds sorts after every name a writer makes; a stranger one (seconds
  // of 11 digits) cannot be sorted after this way, and the clock's seconds stay.
  if (unused_name(seconds) <= newest) {
    const int64_t later = std::max(seconds, newest_seconds) + 1;
    if (unused_name(later) > newest) seconds = later;
  }
  for (;;) {
    path_ = (fs::path(dir_) / unused_name(seconds)).string();
    file_ = std::fopen(path_.c_str(), "wbx");  // x: never another file of the same name
    if (file_ != nullptr) return;
    if (errno != EEXIST) fail("{}: cannot create: {}", path_, std::strerror(errno));
  }
}

void EventFileWriter::append(const std::string& event) {
  const std::string frame = tfrecord_frame(event);
  if (std::fwrite(frame.data(), 1, frame.size(), file_) != frame.size() || std::fflush(file_) != 0)
    fail("{}: cannot append an event: {}", path_, std::strerror(errno));
}

std::vector<std::string> cut_event_files(const std::string& dir, int64_t last_step) {
  std::vector<std::string> damaged;
  if (!fs::is_directory(dir)) return damaged;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !name.starts_with(kPrefix)) continue;
    // What a cut killed before its rename left: TensorBoard would read it as one more event file.
    if (name.find(".tmp-") != std::string::npos)
      remove_file_durably(e.path().string());
    else
      files.push_back(e.path());
  }
  std::ranges::sort(files);
  for (const fs::path& file : files) {
    const std::string bytes = read_file(file.string());
    const TfRecords read = read_tfrecords(bytes);
    std::size_t keep = read.end;
    std::string problem = read.cut_short ? "" : read.problem;
    for (const TfRecord& record : read.records) {
      tfevents::Event event;
      if (!event.ParseFromArray(record.data.data(), static_cast<int>(record.data.size()))) {
        keep = record.offset;
        problem = "the record's data is not an Event";
        break;
      }
      if (event.step() > last_step) {
        keep = record.offset;
        problem.clear();
        break;
      }
    }
    if (!problem.empty())
      damaged.push_back(fmt::format("{}: the record at byte {} is damaged ({}); the file is cut there", file.string(),
                                    keep, problem));
    if (keep < bytes.size()) write_file_atomically(file.string(), bytes.substr(0, keep));
  }
  return damaged;
}

}  // namespace sparsetrain
