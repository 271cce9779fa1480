#include "sparsetrain/data/idx.h"

#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>

#include "sparsetrain/core/error.h"

namespace sparsetrain {
namespace {

std::string_view idx_type_name(uint8_t type) {
  switch (type) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown type";
  }
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads up to `n` bytes at uncompressed offset `offset`; returns how many were read (short only
// at the end of the data). zlib errors (corrupt or truncated gzip data) throw.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) fail("{}: cannot open: {}", path, errno != 0 ? std::strerror(errno) : "out of memory");
    gzbuffer(file_.get(), 1 << 18);
  }

  uint64_t read(uint8_t* out, uint64_t n) {
    uint64_t got = 0;
    while (got < n) {
      unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(n - got, uint64_t{1} << 26));
      int r = gzread(file_.get(), out + got, chunk);
      int code = Z_OK;
      const char* message = gzerror(file_.get(), &code);
      if (r < 0 || (code != Z_OK && code != Z_STREAM_END)) {
        uint64_t at = offset_ + got + static_cast<uint64_t>(std::max(r, 0));
        if (code == Z_ERRNO) fail("{}: read error at byte offset {}: {}", path_, at, std::strerror(errno));
        std::string_view reason = message;  // zlib prefixes its messages with the path
        if (reason.starts_with(path_ + ": ")) reason.remove_prefix(path_.size() + 2);
        fail("{}: corrupt gzip data, reading from uncompressed byte offset {}: {}", path_, at, reason);
      }
      if (r == 0) break;
      got += static_cast<uint64_t>(r);
    }
    offset_ += got;
    return got;
  }

  bool compressed() const { return gzdirect(file_.get()) == 0; }
  uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
  uint64_t offset_ = 0;
};

uint32_t big_endian(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// Reads `size` bytes into `data` with one allocation; returns how many were read.
uint64_t read_all(Reader& reader, std::vector<uint8_t>& data, uint64_t size) {
  data.resize(size);
  return reader.read(data.data(), size);
}

// The same when nothing confirms `size`: a gzip stream of a few bytes can declare a gigabyte. The
// buffer grows with the data read (doubling from 1 MiB), so it never holds more than twice what
// the file really decompresses to.
uint64_t read_growing(Reader& reader, std::vector<uint8_t>& data, uint64_t size) {
  constexpr uint64_t kFirstChunk = uint64_t{1} << 20;
  data.clear();
  while (data.size() < size) {
    const uint64_t have = data.size();
    const uint64_t want = std::min(size - have, std::max(kFirstChunk, have));
    data.reserve(have + want);  // exactly: resize alone may round the capacity up to twice
    data.resize(have + want);
    const uint64_t got = reader.read(data.data() + have, want);
    if (got < want) {
      data.resize(have + got);
      break;
    }
  }
  return data.size();
}

std::string dims_text(const std::vector<int64_t>& dims) { return fmt::format("{}", fmt::join(dims, "x")); }

IdxArray read_checked(const std::string& path, uint32_t magic, size_t rank, std::string_view what, uint64_t max_bytes) {
  IdxArray array = read_idx(path, max_bytes);
  if (array.magic != magic) {
    fail("{}: magic 0x{:08x} at byte offset 0 ({} dimension{}): expected 0x{:08x}, {} ({} dimension{})", path,
         array.magic, array.dims.size(), array.dims.size() == 1 ? "" : "s", magic, what, rank, rank == 1 ? "" : "s");
  }
  return array;
}

}  // namespace

IdxArray read_idx(const std::string& path, uint64_t max_bytes) {
  Reader reader(path);
  uint8_t head[4];
  uint64_t got = reader.read(head, 4);
  if (got < 4) {
    fail("{}: truncated header at byte offset {}: expected a 4-byte magic number, the file has {} byte{}", path, got,
         got, got == 1 ? "" : "s");
  }
  IdxArray array;
  array.magic = big_endian(head);
  if (head[0] != 0 || head[1] != 0) {
    fail(
        "{}: bad magic 0x{:08x} at byte offset 0: expected two zero bytes, a type byte and a dimension count "
        "(0x00000803 for images, 0x00000801 for labels)",
        path, array.magic);
  }
  if (head[2] != 0x08) {
    fail("{}: unsupported element type 0x{:02x} ({}) at byte offset 2: expected 0x08 (unsigned byte)", path, head[2],
         idx_type_name(head[2]));
  }
  const uint32_t rank = head[3];
  if (rank == 0) fail("{}: dimension count 0 at byte offset 3: expected at least one dimension", path);

  uint64_t size = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    uint8_t bytes[4];
    const uint64_t offset = 4 + 4 * uint64_t{i};
    got = reader.read(bytes, 4);
    if (got < 4) {
      fail("{}: truncated header at byte offset {}: expected size {} of {} (4 bytes, big-endian)", path, offset + got,
           i + 1, rank);
    }
    const uint32_t dim = big_endian(bytes);
    if (dim == 0) fail("{}: size {} of {} is 0 at byte offset {}: expected a positive size", path, i + 1, rank, offset);
    array.dims.push_back(dim);
    if (size > max_bytes / dim) {
      fail("{}: size overflow at byte offset {}: sizes {}... declare more than the limit of {} bytes", path, offset,
           dims_text(array.dims), max_bytes);
    }
    size *= dim;
  }

  const uint64_t header = 4 + 4 * uint64_t{rank};
  const uint64_t expected = header + size;
  bool size_confirmed = false;  // by the size of a plain file
  if (!reader.compressed()) {
    std::error_code ec;
    const uint64_t file_size = std::filesystem::file_size(path, ec);
    if (!ec && file_size < expected) {
      fail("{}: data ends at byte offset {}: expected {} bytes ({}-byte header + {} for sizes {})", path, file_size,
           expected, header, size, dims_text(array.dims));
    }
    if (!ec && file_size > expected) {
      fail("{}: {} trailing byte{} at byte offset {}: expected the file to end after {}-byte header + {} for sizes {}",
           path, file_size - expected, file_size - expected == 1 ? "" : "s", expected, header, size,
           dims_text(array.dims));
    }
    size_confirmed = !ec;
  }
  got = size_confirmed ? read_all(reader, array.data, size) : read_growing(reader, array.data, size);
  if (got < size) {
    fail("{}: data ends at byte offset {}: expected {} bytes ({}-byte header + {} for sizes {})", path, header + got,
         expected, header, size, dims_text(array.dims));
  }
  uint8_t extra[1];
  if (reader.read(extra, 1) != 0) {
    fail("{}: trailing bytes at byte offset {}: expected the data to end after {}-byte header + {} for sizes {}", path,
         expected, header, size, dims_text(array.dims));
  }
  return array;
}

IdxArray read_idx_images(const std::string& path, uint64_t max_bytes) {
  return read_checked(path, kIdxImagesMagic, 3, "images", max_bytes);
}

IdxArray read_idx_labels(const std::string& path, uint64_t max_bytes) {
  return read_checked(path, kIdxLabelsMagic, 1, "labels", max_bytes);
}

}  // namespace sparsetrain
