#pragma once
// Checkpoint files in the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON mapping tensor names to
// {"dtype", "shape", "data_offsets"} plus an optional "__metadata__" string map, then the data.
// sparsetrain stores values as F32 and masks as BOOL (one byte, 0 or 1); docs/formats.md lists
// every check the reader makes.
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>

#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

// Writes `tensors` (in their order, back to back after a header padded so that the data starts
// 8-byte aligned) and `metadata` to
// `path` atomically: a temporary `path + ".tmp-<pid>"` in the same directory is written and
// fsynced, renamed over `path`, and the directory fsynced. On failure the temporary file is
// removed and an Error names the path and the system's reason; `path` is left as it was.
void write_safetensors(const std::string& path, const StateDict& tensors,
                       const std::map<std::string, std::string>& metadata);

struct SafetensorsFile {
  StateDict tensors;  // in data order
  std::map<std::string, std::string> metadata;
};

// Reads and strictly validates a whole file; errors name `path` and the offset or tensor.
// Only F32 (values) and BOOL (masks) tensors convert to a StateDict; other standard dtypes are
// validated and then refused by name. A tensor named in `left_out` (a buffer a reader does not
// use, such as an integer index table) is validated like any other and then left out, whatever
// its dtype.
SafetensorsFile read_safetensors(const std::string& path, const std::set<std::string>& left_out = {});
// The same on bytes in memory; `name` stands for the file in messages.
SafetensorsFile read_safetensors_bytes(std::span<const uint8_t> bytes, const std::string& name,
                                       const std::set<std::string>& left_out = {});

}  // namespace sparsetrain
