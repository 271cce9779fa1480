// IDX files: the input is a whole IDX file, plain or gzip-compressed, read from a scratch file by
// read_idx with the default limit and, when that succeeds, by read_idx_images and read_idx_labels
// (read_idx plus the magic check). Opening the file costs more than the checks, so a file that
// read_idx refuses is not read again.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/data/idx.h"

namespace {

// What the reader promises about an array it returns.
void check_array(const sparsetrain::IdxArray& array) {
  FUZZ_CHECK((array.magic & 0xffffff00) == 0x00000800);
  FUZZ_CHECK(array.dims.size() == (array.magic & 0xff));
  uint64_t elements = 1;
  for (int64_t d : array.dims) {
    FUZZ_CHECK(d >= 1);
    elements *= static_cast<uint64_t>(d);
  }
  FUZZ_CHECK(array.data.size() == elements);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > sparsetrain::fuzz::kMaxInputBytes) return -1;
  static const sparsetrain::fuzz::ScratchDir scratch;
  const std::string path = scratch.write("input.idx", sparsetrain::fuzz::as_text(data, size));
  try {
    check_array(sparsetrain::read_idx(path));
  } catch (const sparsetrain::Error&) {
    return 0;
  }
  try {
    FUZZ_CHECK(sparsetrain::read_idx_images(path).magic == sparsetrain::kIdxImagesMagic);
  } catch (const sparsetrain::Error&) {
  }
  try {
    FUZZ_CHECK(sparsetrain::read_idx_labels(path).magic == sparsetrain::kIdxLabelsMagic);
  } catch (const sparsetrain::Error&) {
  }
  return 0;
}
