#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/data/idx.h"

namespace sparsetrain {
namespace {

using Bytes = std::vector<uint8_t>;

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsetrain_test_idx_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string write_plain(const std::string& name, const Bytes& bytes) {
  const std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string write_gzip(const std::string& name, const Bytes& bytes) {
  const std::string path = temp_path(name);
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (!bytes.empty()) {
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  EXPECT_EQ(gzclose(f), Z_OK);
  return path;
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void put32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

// An IDX file: magic 0x000008<rank>, sizes, then bytes 0, 7, 14, ... of the declared size plus `extra`.
Bytes idx(const std::vector<uint32_t>& dims, int extra = 0) {
  Bytes b{0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  size_t size = 1;
  for (uint32_t d : dims) {
    put32(b, d);
    size *= d;
  }
  const auto n = static_cast<size_t>(static_cast<int64_t>(size) + extra);
  for (size_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i * 7));
  return b;
}

class IdxTest : public ::testing::TestWithParam<bool> {
 protected:
  std::string write(const std::string& name, const Bytes& bytes) {
    return GetParam() ? write_gzip(name + ".gz", bytes) : write_plain(name, bytes);
  }
};

TEST_P(IdxTest, ReadsImagesAndLabels) {
  const std::string images = write("images", idx({3, 2, 4}));
  IdxArray a = read_idx_images(images);
  EXPECT_EQ(a.magic, kIdxImagesMagic);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2, 4}));
  ASSERT_EQ(a.data.size(), 24u);
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(a.data[i], static_cast<uint8_t>(i * 7));
  EXPECT_EQ(a.header_bytes(), 16);

  IdxArray l = read_idx_labels(write("labels", idx({5})));
  EXPECT_EQ(l.magic, kIdxLabelsMagic);
  EXPECT_EQ(l.dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(l.data, (Bytes{0, 7, 14, 21, 28}));

  IdxArray g = read_idx(write("rank2", idx({2, 3})));
  EXPECT_EQ(g.magic, 0x00000802u);
  EXPECT_EQ(g.data.size(), 6u);
}

TEST_P(IdxTest, HeaderErrors) {
  std::string p = write("empty", {});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": truncated header at byte offset 0: expected a 4-byte magic number, the file has 0 bytes");
  p = write("short", {0, 0, 8});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": truncated header at byte offset 3: expected a 4-byte magic number, the file has 3 bytes");
  p = write("badmagic", {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1, 0});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": bad magic 0x1f000801 at byte offset 0: expected two zero bytes, a type byte and a dimension count "
                "(0x00000803 for images, 0x00000801 for labels)");
  p = write("float", {0, 0, 0x0d, 0x01, 0, 0, 0, 1, 0, 0, 0, 0});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": unsupported element type 0x0d (float32) at byte offset 2: expected 0x08 (unsigned byte)");
  p = write("unknown", {0, 0, 0x42, 0x01});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": unsupported element type 0x42 (unknown type) at byte offset 2: expected 0x08 (unsigned byte)");
  p = write("rank0", {0, 0, 0x08, 0x00});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": dimension count 0 at byte offset 3: expected at least one dimension");
  p = write("cutdims", {0, 0, 0x08, 0x03, 0, 0, 0, 2, 0, 0});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": truncated header at byte offset 10: expected size 2 of 3 (4 bytes, big-endian)");
  p = write("zerodim", {0, 0, 0x08, 0x02, 0, 0, 0, 2, 0, 0, 0, 0});
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": size 2 of 2 is 0 at byte offset 8: expected a positive size");
  p = write("huge", {0, 0, 0x08, 0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  EXPECT_EQ(
      testing::error_of([&] { read_idx(p); }),
      p + ": size overflow at byte offset 4: sizes 4294967295... declare more than the limit of 1073741824 bytes");
  p = write("overcap", idx({4, 4}));
  EXPECT_EQ(testing::error_of([&] { read_idx(p, 15); }),
            p + ": size overflow at byte offset 8: sizes 4x4... declare more than the limit of 15 bytes");
  EXPECT_EQ(read_idx(p, 16).data.size(), 16u);
  p = write("wrap", {0, 0, 0x08, 0x03, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0});  // 2^48 bytes
  EXPECT_EQ(
      testing::error_of([&] { read_idx(p); }),
      p + ": size overflow at byte offset 8: sizes 65536x65536... declare more than the limit of 1073741824 bytes");
}

TEST_P(IdxTest, DataLengthErrors) {
  std::string p = write("short_data", idx({2, 3}, -2));
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": data ends at byte offset 16: expected 18 bytes (12-byte header + 6 for sizes 2x3)");
  p = write("no_data", idx({2, 3}, -6));
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": data ends at byte offset 12: expected 18 bytes (12-byte header + 6 for sizes 2x3)");
  p = write("long_data", idx({2, 3}, 1));
  const std::string trailing = GetParam() ? ": trailing bytes at byte offset 18: expected the data to end after "
                                            "12-byte header + 6 for sizes 2x3"
                                          : ": 1 trailing byte at byte offset 18: expected the file to end after "
                                            "12-byte header + 6 for sizes 2x3";
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }), p + trailing);
}

TEST_P(IdxTest, WrongKind) {
  const std::string labels = write("labels_kind", idx({5}));
  EXPECT_EQ(testing::error_of([&] { read_idx_images(labels); }),
            labels + ": magic 0x00000801 at byte offset 0 (1 dimension): expected 0x00000803, images (3 dimensions)");
  const std::string images = write("images_kind", idx({1, 2, 2}));
  EXPECT_EQ(testing::error_of([&] { read_idx_labels(images); }),
            images + ": magic 0x00000803 at byte offset 0 (3 dimensions): expected 0x00000801, labels (1 dimension)");
}

INSTANTIATE_TEST_SUITE_P(PlainAndGzip, IdxTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) { return param.param ? "gzip" : "plain"; });

TEST(Idx, MissingFile) {
  const std::string p = temp_path("does_not_exist");
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }), p + ": cannot open: No such file or directory");
}

TEST(Idx, GzipAllocatesOnlyWhatItHolds) {
  // 30-odd bytes of gzip declaring 1 GiB of labels: the reader used to allocate and zero the whole
  // declared size before finding the data missing. Now its peak memory does not move.
  Bytes head{0, 0, 0x08, 0x01};
  put32(head, uint32_t{1} << 30);
  const std::string p = write_gzip("declares_1gib.gz", head);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": data ends at byte offset 8: expected 1073741832 bytes (8-byte header + 1073741824 for sizes "
                "1073741824)");
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);  // kilobytes

  // Data larger than the first 1 MiB chunk still reads whole, as does a short stream's prefix.
  const Bytes big = idx({3, 1000, 1000});
  const IdxArray a = read_idx(write_gzip("three_mib.gz", big));
  EXPECT_EQ(a.data.size(), 3000000u);
  EXPECT_EQ(a.data.capacity(), 3000000u);
  EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), big.begin() + 16));
  const std::string short_path = write_gzip("short_big.gz", idx({3, 1000, 1000}, -1500000));
  EXPECT_EQ(testing::error_of([&] { read_idx(short_path); }),
            short_path + ": data ends at byte offset 1500016: expected 3000016 bytes (16-byte header + 3000000 for "
                         "sizes 3x1000x1000)");
}

TEST(Idx, CorruptGzip) {
  // A large, incompressible-ish payload so the damage lands inside the deflate data.
  Bytes data = idx({100, 100});
  for (size_t i = 8; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  const std::string good = write_gzip("corrupt_src.gz", data);
  Bytes gz = read_bytes(good);
  ASSERT_GT(gz.size(), 200u);

  Bytes flipped = gz;
  flipped[gz.size() - 6] ^= 0xff;  // inside the CRC-32 trailer
  std::string p = write_plain("crc.gz", flipped);
  EXPECT_EQ(testing::error_of([&] { read_idx(p); }),
            p + ": corrupt gzip data, reading from uncompressed byte offset 0: incorrect data check");

  Bytes truncated(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  p = write_plain("truncated.gz", truncated);
  const std::string message = testing::error_of([&] { read_idx(p); });
  EXPECT_EQ(message, p + ": corrupt gzip data, reading from uncompressed byte offset 4: unexpected end of file");
}

}  // namespace
}  // namespace sparsetrain
