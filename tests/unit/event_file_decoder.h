#pragma once
// An event-file reader for the tests that shares no code with sparsetrain's writer: it checks
// each TFRecord frame (the length, and both masked CRCs against a bit-by-bit CRC-32C), then has
// `protoc --decode_raw` decode each record's Event, and reads back protoc's text. Any problem
// throws std::runtime_error, which fails the calling test with its message; so does a missing
// protoc (the tests never skip the independent check).
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sparsetrain::testing {

// CRC-32C one bit at a time, straight from the definition (reflected polynomial 0x82F63B78).
inline uint32_t bitwise_crc32c(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFU;
  for (const char byte : bytes) {
    c ^= static_cast<uint8_t>(byte);
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ (0x82F63B78U & (0U - (c & 1U)));
  }
  return ~c;
}

inline uint32_t bitwise_masked_crc32c(const std::string& bytes) {
  const uint32_t c = bitwise_crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8U;
}

struct DecodedEvent {
  double wall_time = 0.0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;  // the summary's, in order
};

// protoc's text of one Event: "1: 0x<double bits>", "2: <step>", "3: \"<version>\"" and
// "5 { 1 { 1: \"<tag>\" 2: 0x<float bits> } ... }", one item a line.
inline DecodedEvent parse_decode_raw(const std::string& text) {
  DecodedEvent e;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> open;  // field numbers of the messages the line is in
  auto quoted = [&](const std::string& s) {
    if (s.size() < 2 || s.front() != '"' || s.back() != '"') throw std::runtime_error("expected a string: " + text);
    return s.substr(1, s.size() - 2);
  };
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(' '));
    if (line.empty()) continue;
    if (line == "}") {
      open.pop_back();
      continue;
    }
    if (line.ends_with(" {")) {
      open.push_back(line.substr(0, line.size() - 2));
      if (open.size() == 2) e.values.emplace_back();
      continue;
    }
    const std::size_t colon = line.find(": ");
    if (colon == std::string::npos) throw std::runtime_error("unexpected protoc output: " + text);
    const std::string field = line.substr(0, colon), value = line.substr(colon + 2);
    const std::string path = (open.empty() ? "" : open[0] + "." + (open.size() > 1 ? open[1] + "." : "")) + field;
    if (path == "1")
      e.wall_time = std::bit_cast<double>(std::stoull(value, nullptr, 16));
    else if (path == "2")
      e.step = std::stoll(value);
    else if (path == "3")
      e.file_version = quoted(value);
    else if (path == "5.1.1")
      e.values.back().first = quoted(value);
    else if (path == "5.1.2")
      e.values.back().second = std::bit_cast<float>(static_cast<uint32_t>(std::stoul(value, nullptr, 16)));
    else
      throw std::runtime_error("unexpected field " + path + " in protoc output: " + text);
  }
  return e;
}

inline std::string decode_raw_with_protoc(const std::string& record) {
  if (std::system("command -v protoc >/dev/null 2>&1") != 0)
    throw std::runtime_error(
        "protoc is not installed: the event files cannot be checked independently; install "
        "protobuf-compiler (scripts/setup.sh does)");
  const std::filesystem::path in =
      std::filesystem::temp_directory_path() / ("sparsetrain_event_" + std::to_string(::getpid()) + ".bin");
  std::ofstream(in, std::ios::binary) << record;
  std::FILE* p = ::popen(("protoc --decode_raw < '" + in.string() + "' 2>&1").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run protoc");
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof(buffer), p)) > 0;) text.append(buffer, n);
  const int status = ::pclose(p);
  std::filesystem::remove(in);
  if (status != 0) throw std::runtime_error("protoc --decode_raw failed: " + text);
  return text;
}

// Every record of the event file at `path`, decoded.
inline std::vector<DecodedEvent> decode_event_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto le = [&](std::size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
    return v;
  };
  std::vector<DecodedEvent> events;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::string where = path.string() + " at byte " + std::to_string(at) + ": ";
    if (bytes.size() - at < 12) throw std::runtime_error(where + "a record's header is cut short");
    if (le(at + 8, 4) != bitwise_masked_crc32c(bytes.substr(at, 8)))
      throw std::runtime_error(where + "the length's CRC does not match");
    const uint64_t length = le(at, 8);
    if (bytes.size() - at - 12 < length + 4) throw std::runtime_error(where + "a record is cut short");
    const std::string data = bytes.substr(at + 12, length);
    if (le(at + 12 + length, 4) != bitwise_masked_crc32c(data))
      throw std::runtime_error(where + "the data's CRC does not match");
    events.push_back(parse_decode_raw(decode_raw_with_protoc(data)));
    at += 12 + length + 4;
  }
  return events;
}

// The event files of `dir` in TensorBoard's reading order (by name).
inline std::vector<std::filesystem::path> event_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with("events.out.tfevents.")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace sparsetrain::testing
