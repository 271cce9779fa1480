#pragma once
// Crash-safe writes for checkpoints, markers and metrics, and the directories they go to
// (core/read_file.h reads them back).
#include <cstddef>
#include <span>
#include <string>

namespace sparsetrain {

struct ByteRange {
  const void* data;
  std::size_t size;
};

// Writes the pieces, in order, to `path` atomically: a temporary `path + ".tmp-<pid>"` in the same
// directory is written and fsynced, renamed over `path`, and the directory fsynced. A reader
// sees the old file or the whole new one, never a part, even after a crash or power loss. On
// failure (a full disk, a file-size limit) the temporary file is removed, `path` is left as it
// was, and an Error names the path and the system's reason.
void write_file_atomically(const std::string& path, std::span<const ByteRange> pieces);
void write_file_atomically(const std::string& path, const std::string& text);

// Removes `path` and fsyncs its directory, so that the removal survives a crash or power loss
// before what follows it. Returns false when there was nothing to remove; an Error names the
// path and the system's reason.
bool remove_file_durably(const std::string& path);

// Creates the directory `dir` and its parents unless it exists; an Error names `option` (where
// the path came from), the path and the reason, such as a file in the way.
void create_output_directory(const std::string& dir, const std::string& option);

}  // namespace sparsetrain
