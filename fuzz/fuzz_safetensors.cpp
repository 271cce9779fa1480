// Checkpoint files: the input is a whole safetensors file for read_safetensors_bytes, the reader
// behind read_safetensors().
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  try {
    const sparsetrain::SafetensorsFile file =
        sparsetrain::read_safetensors_bytes(std::span<const uint8_t>(data, size), "fuzz.safetensors");
    // What the reader promises about a file it accepts: each tensor holds exactly its shape's
    // elements, and the data it copied fits in the input.
    std::size_t stored = 0;
    for (const sparsetrain::StateTensor& t : file.tensors.tensors) {
      uint64_t elements = 1;
      for (int64_t d : t.shape) {
        FUZZ_CHECK(d >= 0);
        elements *= static_cast<uint64_t>(d);
      }
      FUZZ_CHECK((t.is_mask ? t.keep.size() : t.values.size()) == elements);
      FUZZ_CHECK(t.is_mask ? t.values.empty() : t.keep.empty());
      for (uint8_t k : t.keep) FUZZ_CHECK(k <= 1);
      stored += t.is_mask ? t.keep.size() : t.values.size() * sizeof(float);
    }
    FUZZ_CHECK(stored <= size);
  } catch (const sparsetrain::Error&) {
  }
  return 0;
}
