#pragma once
// IDX files (the MNIST / Fashion-MNIST container), plain or gzip-compressed.
//
// Layout, all big-endian: two zero bytes, a type byte, a dimension count D, D sizes of 4 bytes
// each, then prod(sizes) elements, row-major. Only type 0x08 (unsigned byte) is supported; the
// other standard types (0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64) are
// rejected by name. Reading is strict: every Error names the file, the byte offset in the
// uncompressed IDX stream and what was expected (docs/data.md lists the messages). Nothing larger
// than the header-declared size is allocated, and only after that size passed `max_bytes`. A
// plain file's size must confirm it before the one allocation; for gzip data (whose header a tiny
// file can fill with any size) the buffer grows with the data really decompressed, to at most
// twice that.
#include <cstdint>
#include <string>
#include <vector>

namespace sparsetrain {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // uint8 [n, rows, cols]
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // uint8 [n]
inline constexpr uint64_t kIdxDefaultMaxBytes = uint64_t{1} << 30;

struct IdxArray {
  uint32_t magic = 0;
  std::vector<int64_t> dims;  // every entry >= 1
  std::vector<uint8_t> data;  // prod(dims) bytes, row-major
  int64_t header_bytes() const { return 4 + 4 * static_cast<int64_t>(dims.size()); }
};

// Reads a whole IDX file; gzip is recognised by its content (magic 0x1f 0x8b), not the name.
IdxArray read_idx(const std::string& path, uint64_t max_bytes = kIdxDefaultMaxBytes);

// read_idx plus a check of the magic: 0x00000803 (three dimensions) or 0x00000801 (one).
IdxArray read_idx_images(const std::string& path, uint64_t max_bytes = kIdxDefaultMaxBytes);
IdxArray read_idx_labels(const std::string& path, uint64_t max_bytes = kIdxDefaultMaxBytes);

}  // namespace sparsetrain
