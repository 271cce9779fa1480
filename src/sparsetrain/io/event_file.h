#pragma once
// TensorBoard event files, events.out.tfevents.*: TFRecord frames (io/tfrecord.h) of Event
// protos (io/tfevents.proto). A file starts with the record of its version, "brain.Event:2";
// each later record is one step's scalars. TensorBoard reads every such file of a directory as
// one run, in the order of their names.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace sparsetrain {

using Scalars = std::vector<std::pair<std::string, float>>;

// Serialized Events: the version record's, and one step's scalars (wall_time: Unix seconds).
std::string file_version_event(double wall_time);
std::string scalars_event(double wall_time, int64_t step, const Scalars& scalars);

class EventFileWriter {
 public:
  // The file is created at the first write, with `dir` if need be:
  // dir/events.out.tfevents.<Unix seconds>.<host>.<pid>.<n>, n the first number not taken, and
  // the seconds raised where need be so that the name sorts after every event file of `dir`.
  explicit EventFileWriter(std::string dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Appends the event of `step` with `scalars` and flushes it; an Error names the file.
  void write(int64_t step, const Scalars& scalars);

 private:
  void open_new_file(int64_t seconds);
  void append(const std::string& event);

  std::string dir_, path_;
  std::FILE* file_ = nullptr;
};

// For a run resumed at `last_step`: cuts each event file of `dir` (if `dir` exists) before its
// first record of a later step, so that no step is written twice or goes back. A file is also
// cut before a record that is cut short (a run killed while writing it) or damaged (a CRC that
// does not match, or data that is not an Event); returns, for each damaged one, a line naming the
// file, the byte offset and what is wrong.
std::vector<std::string> cut_event_files(const std::string& dir, int64_t last_step);

}  // namespace sparsetrain
