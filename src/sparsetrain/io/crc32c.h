#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord frames (io/tfrecord.h). Debian 12 ships no C or
// C++ library that offers it (zlib's crc32 uses the other polynomial; protobuf keeps its own
// copy internal), so it is computed here from a 256-entry table, a byte at a time: the frames are
// small and written once per logged step.
#include <cstdint>
#include <string_view>

namespace sparsetrain {

// The CRC-32C of `bytes` (reflected polynomial 0x82F63B78): crc32c("123456789") = 0xE3069283.
uint32_t crc32c(std::string_view bytes);

// TFRecord's masked form, ((crc >> 15) | (crc << 17)) + 0xa282ead8: a frame's stored CRCs are of
// this form, so that the CRC of data that itself holds CRCs does not degenerate.
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace sparsetrain
