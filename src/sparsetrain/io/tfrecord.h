#pragma once
// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length | uint32 masked CRC-32C of the length | data | uint32 masked CRC-32C of the data
// with the integers little-endian (io/crc32c.h has the masking).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sparsetrain {

// The frame of one record holding `data`.
std::string tfrecord_frame(std::string_view data);

struct TfRecord {
  std::string_view data;
  std::size_t offset = 0;  // where its frame starts
};

struct TfRecords {
  std::vector<TfRecord> records;  // the whole, checked records from the start, in order
  std::size_t end = 0;            // the offset after the last of them
  // Empty when every byte belongs to a whole record; else why the record at `end` was not read:
  // the bytes end inside it (a writer stopped mid-record), or one of its CRCs does not match.
  std::string problem;
  bool cut_short = false;  // the problem is that the bytes end inside the record
};

// The records of `bytes` (views into it) up to the first that is cut short or fails a CRC check.
TfRecords read_tfrecords(std::string_view bytes);
// The views would outlive a temporary string.
TfRecords read_tfrecords(std::string&& bytes) = delete;

}  // namespace sparsetrain
