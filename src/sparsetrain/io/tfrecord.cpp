#include "sparsetrain/io/tfrecord.h"

#include <fmt/format.h>

#include <cstdint>

#include "sparsetrain/io/crc32c.h"

namespace sparsetrain {

namespace {

constexpr std::size_t kLengthBytes = 8, kCrcBytes = 4;

template <typename T>
void put_le(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFFU));
}

template <typename T>
T get_le(std::string_view bytes) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  return value;
}

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string frame;
  frame.reserve(kLengthBytes + 2 * kCrcBytes + data.size());
  put_le<uint64_t>(frame, data.size());
  put_le<uint32_t>(frame, masked_crc32c(frame));
  frame.append(data);
  put_le<uint32_t>(frame, masked_crc32c(data));
  return frame;
}

TfRecords read_tfrecords(std::string_view bytes) {
  TfRecords out;
  std::size_t at = 0;
  auto stop = [&](bool cut_short, std::string problem) {
    out.end = at;
    out.cut_short = cut_short;
    out.problem = std::move(problem);
    return std::move(out);
  };
  while (at < bytes.size()) {
    const std::string_view rest = bytes.substr(at);
    if (rest.size() < kLengthBytes + kCrcBytes)
      return stop(true, fmt::format("the data ends inside a record's header ({} of 12 bytes)", rest.size()));
    const std::string_view length_bytes = rest.substr(0, kLengthBytes);
    if (get_le<uint32_t>(rest.substr(kLengthBytes)) != masked_crc32c(length_bytes))
      return stop(false, "the CRC of the record's length does not match");
    const uint64_t length = get_le<uint64_t>(length_bytes);
    const std::size_t header = kLengthBytes + kCrcBytes;
    if (length > rest.size() - header || rest.size() - header - length < kCrcBytes)
      return stop(true, fmt::format("the data ends inside a record of {} bytes ({} bytes of its frame are there)",
                                    length, rest.size()));
    const std::string_view data = rest.substr(header, length);
    if (get_le<uint32_t>(rest.substr(header + length)) != masked_crc32c(data))
      return stop(false, "the CRC of the record's data does not match");
    out.records.push_back({data, at});
    at += header + length + kCrcBytes;
  }
  return stop(false, "");
}

}  // namespace sparsetrain
