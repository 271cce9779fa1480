// Safetensors checkpoints: bit-exact round trips, a file written byte by byte, every rejection
// of the strict reader with its whole message, and the atomic writer's failure behaviour.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/io/safetensors.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

const std::string kName = "t.safetensors";

// An 8-byte little-endian length, the header as given (no padding), then the data.
std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string read_error(const std::vector<uint8_t>& bytes) {
  return error_of([&] { read_safetensors_bytes(bytes, kName); });
}

// An entry's JSON text.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                  uint64_t end) {
  return fmt::format(R"("{}":{{"dtype":"{}","shape":{},"data_offsets":[{},{}]}})", name, dtype, shape, begin, end);
}

// A header object of the given entries.
std::string object_of(std::initializer_list<std::string> entries) {
  return fmt::format("{{{}}}", fmt::join(entries, ","));
}

std::vector<uint8_t> slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A fresh, empty directory per test.
class SafetensorsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("sparsetrain-io-{}-{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

StateTensor values(std::string name, std::vector<int64_t> shape, std::vector<float> v) {
  StateTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.values = std::move(v);
  return t;
}

StateTensor mask(std::string name, std::vector<int64_t> shape, std::vector<uint8_t> keep) {
  StateTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.is_mask = true;
  t.keep = std::move(keep);
  return t;
}

StateDict sample_dict() {
  StateDict sd;
  sd.add(values("layer.weight", {2, 3},
                {-0.0f, std::bit_cast<float>(0x7fc12345u), std::bit_cast<float>(0xff800001u),  // NaN payloads
                 std::bit_cast<float>(0x00000001u), std::bit_cast<float>(0x807fffffu),         // subnormals
                 std::numeric_limits<float>::infinity()}));
  sd.add(mask("layer.weight_mask", {2, 3}, {1, 0, 0, 1, 1, 0}));
  sd.add(values("layer.bias", {3}, {1.0f, -2.5f, 3.25e-38f}));
  sd.add(values("scale", {}, {0.5f}));
  sd.add(values("empty", {0, 4}, {}));
  sd.add(mask("empty_mask", {0}, {}));
  sd.add(values("tail", {1}, {std::numeric_limits<float>::max()}));
  return sd;
}

void expect_same(const StateDict& a, const StateDict& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const StateTensor& x = a.tensors[i];
    const StateTensor& y = b.tensors[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.shape, y.shape) << x.name;
    EXPECT_EQ(x.is_mask, y.is_mask) << x.name;
    EXPECT_EQ(x.keep, y.keep) << x.name;
    ASSERT_EQ(x.values.size(), y.values.size()) << x.name;
    if (!x.values.empty()) {  // bit-exact, NaN payloads and signed zeros included
      EXPECT_EQ(std::memcmp(x.values.data(), y.values.data(), x.values.size() * sizeof(float)), 0) << x.name;
    }
  }
}

TEST_F(SafetensorsFiles, RoundTripIsBitExactAndAligned) {
  const StateDict sd = sample_dict();
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"step", "12"}, {"note", "µ \"quoted\""}};
  const std::string path = (dir_ / "model.safetensors").string();
  write_safetensors(path, sd, metadata);
  EXPECT_EQ(entries(), std::vector<std::string>{"model.safetensors"});

  const SafetensorsFile file = read_safetensors(path);
  expect_same(file.tensors, sd);
  EXPECT_EQ(file.metadata, metadata);

  // The data starts 8-byte aligned, the header is padded with spaces, the data is contiguous.
  const std::vector<uint8_t> raw = slurp(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | raw[static_cast<size_t>(i)];
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.size(), 8 + n + (6 + 3 + 1 + 0 + 1) * 4 + 6);
  const std::string header(raw.begin() + 8, raw.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  EXPECT_LT(header.size() - header.rfind('}') - 1, 8u);
  EXPECT_EQ(header.find_first_not_of(' ', header.rfind('}') + 1), std::string::npos);
  EXPECT_NE(header.find(R"("layer.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"), std::string::npos);
  EXPECT_NE(header.find(R"("layer.weight_mask":{"dtype":"BOOL","shape":[2,3],"data_offsets":[24,30]})"),
            std::string::npos);
  EXPECT_NE(header.find(R"("layer.bias":{"dtype":"F32","shape":[3],"data_offsets":[30,42]})"), std::string::npos);
  EXPECT_EQ(header.find(R"({"__metadata__":{)"), 0u);

  // The bytes in memory read the same.
  expect_same(read_safetensors_bytes(raw, kName).tensors, sd);
}

TEST_F(SafetensorsFiles, EmptyDictRoundTrips) {
  const std::string path = (dir_ / "empty.safetensors").string();
  write_safetensors(path, {}, {});
  EXPECT_EQ(slurp(path), (std::vector<uint8_t>{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}));
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_TRUE(file.tensors.tensors.empty());
  EXPECT_TRUE(file.metadata.empty());
}

// The format's reference example, byte by byte: {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}
// (54 bytes, padded to 56) then 1.0f and -2.5f little-endian.
TEST_F(SafetensorsFiles, ReadsAFileWrittenByHand) {
  const std::vector<uint8_t> bytes = {
      56,   0,    0,    0,    0,   0,   0,   0,  // header length
      '{',  '"',  'a',  '"',  ':', '{', '"', 'd', 't', 'y', 'p', 'e', '"', ':', '"', 'F', '3', '2', '"',
      ',',  '"',  's',  'h',  'a', 'p', 'e', '"', ':', '[', '2', ']', ',', '"', 'd', 'a', 't', 'a', '_',
      'o',  'f',  'f',  's',  'e', 't', 's', '"', ':', '[', '0', ',', '8', ']', '}', '}', ' ', ' ',  // 54 + 2 spaces
      0x00, 0x00, 0x80, 0x3f,                                                                        // 1.0f
      0x00, 0x00, 0x20, 0xc0,                                                                        // -2.5f
  };
  ASSERT_EQ(bytes.size(), 8u + 56u + 8u);
  const fs::path path = dir_ / "hand.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const SafetensorsFile file = read_safetensors(path.string());
  ASSERT_EQ(file.tensors.tensors.size(), 1u);
  const StateTensor& a = file.tensors.tensors[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.shape, std::vector<int64_t>{2});
  EXPECT_FALSE(a.is_mask);
  EXPECT_EQ(a.values, (std::vector<float>{1.0f, -2.5f}));
  EXPECT_TRUE(file.metadata.empty());
}

TEST(SafetensorsRead, MasksMetadataAndDataOrder) {
  // Listed out of data order; the state dict comes back in data order.
  const std::string header =
      object_of({entry("m", "BOOL", "[3]", 4, 7), entry("w", "F32", "[]", 0, 4), R"("__metadata__":{"k":"v"})"});
  const SafetensorsFile file = read_safetensors_bytes(file_of(header, {0, 0, 0x40, 0x40, 1, 0, 1}), kName);
  ASSERT_EQ(file.tensors.tensors.size(), 2u);
  EXPECT_EQ(file.tensors.tensors[0].name, "w");
  EXPECT_EQ(file.tensors.tensors[0].values, std::vector<float>{3.0f});
  EXPECT_TRUE(file.tensors.tensors[0].shape.empty());
  EXPECT_EQ(file.tensors.tensors[1].name, "m");
  EXPECT_TRUE(file.tensors.tensors[1].is_mask);
  EXPECT_EQ(file.tensors.tensors[1].keep, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"k", "v"}}));
}

TEST(SafetensorsRead, SizesEveryStandardDtype) {
  const std::vector<std::pair<std::string, uint64_t>> dtypes = {
      {"F64", 8}, {"F32", 4},  {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},     {"I16", 2},    {"I8", 1},
      {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4},  {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto& [dtype, size] : dtypes) {
    const std::vector<uint8_t> data(3 * size, 0);
    const std::string error = read_error(file_of(object_of({entry("x", dtype, "[3]", 0, 3 * size)}), data));
    if (dtype == "F32" || dtype == "BOOL") {
      EXPECT_EQ(error, "no error");
    } else {
      const bool other_float = dtype == "F16" || dtype == "BF16" || dtype == "F64";
      EXPECT_EQ(error, fmt::format("t.safetensors: tensor 'x' has dtype {}; sparsetrain reads F32 values and BOOL "
                                   "masks only{}",
                                   dtype,
                                   other_float ? " (a Hugging Face model in another float type: save it as float32 "
                                                 "first, with model.float().save_pretrained(DIR))"
                                               : ""));
    }
    // One element short: the size check knows the element size.
    const std::vector<uint8_t> short_data(2 * size, 0);
    EXPECT_EQ(read_error(file_of(object_of({entry("x", dtype, "[3]", 0, 2 * size)}), short_data)),
              fmt::format("t.safetensors: tensor 'x': data_offsets [0, {}] span {} bytes, but shape [3] of {} takes "
                          "{} bytes",
                          2 * size, 2 * size, dtype, 3 * size));
  }
}

TEST(SafetensorsRead, RejectsEmptyAndShortFiles) {
  EXPECT_EQ(read_error({}),
            "t.safetensors: empty file (0 bytes); a safetensors file starts with an 8-byte header length");
  EXPECT_EQ(read_error({1, 0, 0, 0, 0, 0, 0}),
            "t.safetensors: 7 bytes is too short for a safetensors file; the header length alone takes 8 bytes");
}

TEST(SafetensorsRead, RejectsGitLfsPointers) {
  const std::string pointer =
      "version https://git-lfs.github.com/spec/v1\n"
      "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
      "size 12345\n";
  EXPECT_EQ(read_error(std::vector<uint8_t>(pointer.begin(), pointer.end())),
            "t.safetensors: this is a Git LFS pointer file, not the checkpoint; fetch the data with `git lfs pull`");
}

// A text file (a YAML config given by mistake) is named as not a safetensors file instead of
// having its first 8 characters quoted as an absurd header length.
TEST(SafetensorsRead, RejectsTextFilesAsNotSafetensors) {
  const std::string yaml = "model: {name: gpt, n_layer: 2}\ntrain_input: {data: text_file}\n";
  EXPECT_EQ(read_error(std::vector<uint8_t>(yaml.begin(), yaml.end())),
            "t.safetensors: not a safetensors file: it starts with the text 'model: {' at offset 0, where a "
            "safetensors file has an 8-byte little-endian header length");
  const std::string lines = "# a\n\tb: 1\n";
  EXPECT_EQ(read_error(std::vector<uint8_t>(lines.begin(), lines.end())),
            "t.safetensors: not a safetensors file: it starts with the text '# a\\x0a\\x09b: ' at offset 0, where a "
            "safetensors file has an 8-byte little-endian header length");
}

TEST(SafetensorsRead, RejectsBadHeaderLengths) {
  std::vector<uint8_t> absurd = file_of("{}");
  absurd[0] = 0x01, absurd[1] = 0xe1, absurd[2] = 0xf5, absurd[3] = 0x05;  // 100000001
  EXPECT_EQ(read_error(absurd),
            "t.safetensors: header length 100000001 at offset 0 is over the limit of 100000000 bytes");
  std::vector<uint8_t> past_end = file_of("{}");
  past_end[0] = 3;
  EXPECT_EQ(read_error(past_end),
            "t.safetensors: header length 3 at offset 0 runs past the end of the file (10 bytes, so at most 2 bytes "
            "of header)");
  EXPECT_EQ(read_error(file_of("")), "t.safetensors: header length 0 at offset 0; the header must be a JSON object");
}

TEST(SafetensorsRead, RejectsBadUtf8AndJson) {
  EXPECT_EQ(read_error(file_of("{\"a\xff\":1}")), "t.safetensors: the header is not valid UTF-8 at offset 11");
  EXPECT_EQ(read_error(file_of("{\"\xc0\xaf\":1}")), "t.safetensors: the header is not valid UTF-8 at offset 10");
  EXPECT_EQ(read_error(file_of("{\"\xed\xa0\x80\":1}")), "t.safetensors: the header is not valid UTF-8 at offset 10");
  EXPECT_EQ(read_error(file_of(R"({"a":)")),
            "t.safetensors: the header is not valid JSON: syntax error while parsing value - unexpected end of "
            "input; expected '[', '{', or a literal (at offset 13)");
  EXPECT_EQ(read_error(file_of(R"({"a":1} x)")),
            "t.safetensors: the header is not valid JSON: syntax error while parsing value - invalid literal; last "
            "read: '1} x'; expected end of input (at offset 16)");
  EXPECT_EQ(read_error(file_of("[1, 2]  ")), "t.safetensors: the header is a JSON array, not an object");
  // nlohmann reports a number beyond a double's range as out_of_range, not as a parse error.
  EXPECT_EQ(read_error(file_of(R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})")),
            "t.safetensors: the header is not valid JSON: number overflow parsing '1e400'");
}

TEST(SafetensorsRead, RejectsDuplicateKeys) {
  const std::vector<uint8_t> data(8, 0);
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[1]", 0, 4), entry("a", "F32", "[1]", 4, 8)}), data)),
            "t.safetensors: duplicate tensor name 'a' in the header");
  EXPECT_EQ(read_error(file_of(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data)),
            "t.safetensors: tensor 'a': duplicate field 'dtype'");
  EXPECT_EQ(read_error(file_of(R"({"__metadata__":{"k":"1","k":"2"}})")), "t.safetensors: duplicate metadata key 'k'");
  EXPECT_EQ(read_error(file_of(R"({"__metadata__":{},"__metadata__":{}})")),
            "t.safetensors: '__metadata__' appears twice in the header");
}

TEST(SafetensorsRead, RejectsBadEntries) {
  const std::vector<uint8_t> data(8, 0);
  EXPECT_EQ(read_error(file_of(R"({"a":[1]})")),
            "t.safetensors: tensor 'a': the entry is a JSON array, not an object of dtype, shape and data_offsets");
  EXPECT_EQ(read_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data)),
            "t.safetensors: tensor 'a': unknown field 'x'; an entry has dtype, shape and data_offsets only");
  EXPECT_EQ(read_error(file_of(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", data)),
            "t.safetensors: tensor 'a': missing 'shape'");
  EXPECT_EQ(read_error(file_of(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", data)),
            "t.safetensors: tensor 'a': dtype is a JSON number, not a string");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F24", "[2]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': unknown dtype 'F24'; expected one of F64, F32, F16, BF16, I64, I32, I16, I8, "
            "U8, BOOL, U16, U32, U64, F8_E4M3, F8_E5M2");
}

TEST(SafetensorsRead, RejectsBadShapes) {
  const std::vector<uint8_t> data(8, 0);
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[2,-1]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape[1] is -1; dimensions cannot be negative");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[2.0]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape[0] is 2.0, not a non-negative integer");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", R"(["2"])", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape[0] is \"2\", not a non-negative integer");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "{}", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape is a JSON object, not an array");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[4294967296,4294967296]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape [4294967296,4294967296] has more than 2^64 elements (the product "
            "overflows)");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[4611686018427387904]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape [4611686018427387904] of F32 takes more than 2^64 bytes (the size "
            "overflows)");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "U8", "[9223372036854775808]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape[0] is 9223372036854775808, above the largest dimension 2^63 - 1");
  // Values quoted in messages are bounded: nlohmann's dump() recursed once per level and a million
  // levels overflowed the stack; a long one is cut.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[" + deep + "]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape[0] is a JSON array nested more than 16 deep, not a non-negative integer");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[4294967296,4294967296," + deep + "]", 0, 8)}), data)),
            "t.safetensors: tensor 'a': shape a JSON array nested more than 16 deep has more than 2^64 elements (the "
            "product overflows)");
  std::string ones = "[1";
  for (int i = 0; i < 200; ++i) ones += ",1";
  EXPECT_EQ(read_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + ones + "]}}", data)),
            "t.safetensors: tensor 'a': data_offsets " + ones.substr(0, 197) +
                "... is not two non-negative integers [begin, end]");
}

TEST(SafetensorsRead, RejectsBadOffsets) {
  const std::vector<uint8_t> data(8, 0);
  const auto with_offsets = [&](const std::string& offsets) {
    return read_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + offsets + "}}", data));
  };
  EXPECT_EQ(with_offsets("[0]"),
            "t.safetensors: tensor 'a': data_offsets [0] is not two non-negative integers [begin, end]");
  EXPECT_EQ(with_offsets("[0,8,8]"),
            "t.safetensors: tensor 'a': data_offsets [0,8,8] is not two non-negative integers [begin, end]");
  EXPECT_EQ(with_offsets("[0,8.0]"),
            "t.safetensors: tensor 'a': data_offsets [0,8.0] is not two non-negative integers [begin, end]");
  EXPECT_EQ(with_offsets("[-8,0]"),
            "t.safetensors: tensor 'a': data_offsets [-8,0] is not two non-negative integers [begin, end]");
  EXPECT_EQ(with_offsets("\"0-8\""),
            "t.safetensors: tensor 'a': data_offsets \"0-8\" is not two non-negative integers [begin, end]");
  EXPECT_EQ(with_offsets("[8,0]"),
            "t.safetensors: tensor 'a': data_offsets [8, 0] decrease; begin must not exceed end");
  EXPECT_EQ(with_offsets("[0,12]"),
            "t.safetensors: tensor 'a': data_offsets [0, 12] span 12 bytes, but shape [2] of F32 takes 8 bytes");
  EXPECT_EQ(with_offsets("[4,12]"),
            "t.safetensors: tensor 'a': data_offsets [4, 12] run past the end of the 8-byte data buffer");
  EXPECT_EQ(with_offsets("[18446744073709551615,7]"),
            "t.safetensors: tensor 'a': data_offsets [18446744073709551615, 7] decrease; begin must not exceed end");
}

TEST(SafetensorsRead, RejectsGapsOverlapsAndTrailingBytes) {
  const std::vector<uint8_t> data(12, 0);
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[1]", 0, 4), entry("b", "F32", "[1]", 8, 12)}), data)),
            "t.safetensors: bytes [4, 8) of the data buffer belong to no tensor (a gap before tensor 'b')");
  EXPECT_EQ(read_error(file_of(object_of({entry("b", "F32", "[1]", 8, 12)}), data)),
            "t.safetensors: bytes [0, 8) of the data buffer belong to no tensor (a gap before tensor 'b')");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[2]", 0, 8), entry("b", "F32", "[2]", 4, 12)}), data)),
            "t.safetensors: tensor 'b' at data_offsets [4, 12] overlaps tensor 'a' at [0, 8]");
  EXPECT_EQ(read_error(file_of(object_of({entry("a", "F32", "[3]", 0, 12), entry("z", "F32", "[0]", 4, 4)}), data)),
            "t.safetensors: tensor 'z' at data_offsets [4, 4] overlaps tensor 'a' at [0, 12]");
  const std::string header = object_of({entry("a", "F32", "[2]", 0, 8)});
  EXPECT_EQ(
      read_error(file_of(header, data)),
      fmt::format("t.safetensors: 4 trailing bytes at offset {} after the last tensor's data", 8 + header.size() + 8));
  EXPECT_EQ(read_error(file_of("{}", {0})), "t.safetensors: 1 trailing byte at offset 10 after the last tensor's data");
}

TEST(SafetensorsRead, RejectsBadMetadataAndMaskBytes) {
  EXPECT_EQ(read_error(file_of(R"({"__metadata__":{"step":12}})")),
            "t.safetensors: __metadata__ value 'step' is a JSON number, not a string");
  EXPECT_EQ(read_error(file_of(R"({"__metadata__":{"a":null}})")),
            "t.safetensors: __metadata__ value 'a' is a JSON null, not a string");
  EXPECT_EQ(read_error(file_of(R"({"__metadata__":["a"]})")),
            "t.safetensors: __metadata__ is a JSON array, not an object of strings");
  const std::string header = object_of({entry("m", "BOOL", "[3]", 0, 3)});
  EXPECT_EQ(read_error(file_of(header, {1, 2, 0})),
            fmt::format("t.safetensors: tensor 'm': BOOL byte 2 at offset {} is not 0 or 1", 8 + header.size() + 1));
}

// A tensor a reader names as left out (an int64 buffer beside the weights) is validated with the
// others, then dropped whatever its dtype; without the name its dtype is refused.
TEST(SafetensorsRead, LeavesOutNamedTensorsAfterValidatingThem) {
  const std::string header = object_of({entry("ids", "I64", "[2]", 0, 16), entry("w", "F32", "[1]", 16, 20)});
  std::vector<uint8_t> data(20, 0);
  data[8] = 1;
  data[18] = 0x80;
  data[19] = 0x3f;  // w = 1.0f
  const SafetensorsFile read = read_safetensors_bytes(file_of(header, data), kName, {"ids"});
  ASSERT_EQ(read.tensors.tensors.size(), 1u);
  EXPECT_EQ(read.tensors.tensors[0].name, "w");
  EXPECT_EQ(read.tensors.tensors[0].values, std::vector<float>{1.0f});
  EXPECT_EQ(read_error(file_of(header, data)),
            "t.safetensors: tensor 'ids' has dtype I64; sparsetrain reads F32 values and BOOL masks only");
  const std::string overlapping = object_of({entry("ids", "I64", "[2]", 0, 16), entry("w", "F32", "[1]", 12, 16)});
  EXPECT_EQ(error_of([&] { read_safetensors_bytes(file_of(overlapping, std::vector<uint8_t>(16)), kName, {"ids"}); }),
            "t.safetensors: tensor 'w' at data_offsets [12, 16] overlaps tensor 'ids' at [0, 16]");
}

// Every truncation and many single-byte corruptions of a valid file end in an Error or a valid
// result, never in another exception or a crash.
TEST(SafetensorsRead, SurvivesTruncationAndCorruption) {
  const std::string header =
      object_of({entry("m", "BOOL", "[2]", 8, 10), entry("w", "F32", "[2]", 0, 8), R"("__metadata__":{"k":"v"})"});
  const std::vector<uint8_t> good = file_of(header, {0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf, 1, 0});
  ASSERT_EQ(read_error(good), "no error");
  const auto survives = [](const std::vector<uint8_t>& bytes) {
    try {
      read_safetensors_bytes(bytes, kName);
    } catch (const Error&) {
    }
  };
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_NE(read_error(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))),
              "no error");
  }
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t v : {uint8_t{0}, uint8_t{0x20}, uint8_t{'"'}, uint8_t{'9'}, uint8_t{'-'}, uint8_t{0xff}}) {
      std::vector<uint8_t> bad = good;
      bad[i] = v;
      EXPECT_NO_THROW(survives(bad)) << "byte " << i;
    }
}

TEST_F(SafetensorsFiles, ReadNamesMissingFiles) {
  const std::string path = (dir_ / "missing.safetensors").string();
  EXPECT_EQ(error_of([&] { read_safetensors(path); }), path + ": cannot open: No such file or directory");
  EXPECT_EQ(error_of([&] { read_safetensors(dir_.string()); }), dir_.string() + ": is a directory; expected a file");
}

TEST_F(SafetensorsFiles, WriteIntoAMissingDirectoryFailsCleanly) {
  const std::string path = (dir_ / "no" / "such" / "model.safetensors").string();
  EXPECT_EQ(error_of([&] { write_safetensors(path, sample_dict(), {}); }),
            fmt::format("{}: cannot create the temporary file '{}.tmp-{}': No such file or directory", path, path,
                        ::getpid()));
  EXPECT_TRUE(entries().empty());
}

TEST_F(SafetensorsFiles, FailedRenameRemovesTheTemporaryFile) {
  const fs::path target = dir_ / "model.safetensors";
  fs::create_directories(target / "inside");  // a non-empty directory cannot be renamed over
  const std::string path = target.string();
  EXPECT_EQ(
      error_of([&] { write_safetensors(path, sample_dict(), {}); }),
      fmt::format("{}: cannot rename the temporary file '{}.tmp-{}' over it: Is a directory", path, path, ::getpid()));
  EXPECT_EQ(entries(), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsFiles, FailedWriteRemovesTheTemporaryFileAndKeepsTheOld) {
  const std::string path = (dir_ / "model.safetensors").string();
  write_safetensors(path, sample_dict(), {{"v", "1"}});
  const std::vector<uint8_t> before = slurp(path);

  StateDict big;
  big.add(values("big", {1 << 16}, std::vector<float>(1 << 16, 1.0f)));
  // A file size limit turns the write into EFBIG ("File too large"), as a full disk would ENOSPC.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 4096;
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string error = error_of([&] { write_safetensors(path, big, {}); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);

  EXPECT_EQ(error,
            fmt::format("{}: cannot write the temporary file '{}.tmp-{}': File too large", path, path, ::getpid()));
  EXPECT_EQ(entries(), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(slurp(path), before);
}

TEST_F(SafetensorsFiles, OverwritingReplacesTheWholeFile) {
  const std::string path = (dir_ / "model.safetensors").string();
  StateDict big;
  big.add(values("big", {1000}, std::vector<float>(1000, 7.0f)));
  write_safetensors(path, big, {{"old", "yes"}});
  StateDict small;
  small.add(values("small", {2}, {1.0f, 2.0f}));
  write_safetensors(path, small, {});
  EXPECT_EQ(fs::file_size(path), 8u + 64u + 8u);  // {"small":{...}} is 58 bytes, padded to 64
  const SafetensorsFile file = read_safetensors(path);
  expect_same(file.tensors, small);
  EXPECT_TRUE(file.metadata.empty());
  EXPECT_EQ(entries(), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsFiles, WriteRefusesInconsistentTensors) {
  const std::string path = (dir_ / "model.safetensors").string();
  const auto refused = [&](StateTensor t) {
    StateDict sd;
    sd.tensors.push_back(std::move(t));
    return error_of([&] { write_safetensors(path, sd, {}); });
  };
  EXPECT_EQ(refused(values("w", {2, 2}, {1, 2, 3})), path + ": tensor 'w' has shape [2, 2] (4 elements) but 3 values");
  EXPECT_EQ(refused(mask("m", {2}, {1, 0, 1})), path + ": tensor 'm' has shape [2] (2 elements) but 3 mask bytes");
  EXPECT_EQ(refused(mask("m", {2}, {1, 3})), path + ": mask 'm' holds 3 at index 1, not 0 or 1");
  EXPECT_EQ(refused(values("w", {-1}, {})), path + ": tensor 'w' has an invalid shape [-1]");
  EXPECT_EQ(refused(values("__metadata__", {1}, {1})), path + ": '__metadata__' is reserved and cannot name a tensor");
  EXPECT_EQ(refused(values("w\xff", {1}, {1})), path + ": tensor name 'w\\xff' is not valid UTF-8");
  StateDict twice;
  twice.tensors = {values("w", {1}, {1}), values("w", {1}, {2})};
  EXPECT_EQ(error_of([&] { write_safetensors(path, twice, {}); }),
            path + ": tensor 'w' appears twice in the state dict");
  EXPECT_TRUE(entries().empty());
}

}  // namespace
}  // namespace sparsetrain
