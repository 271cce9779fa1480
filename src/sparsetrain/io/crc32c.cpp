#include "sparsetrain/io/crc32c.h"

#include <array>

namespace sparsetrain {

namespace {

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFU;
  for (const char byte : bytes) c = kTable[(c ^ static_cast<uint8_t>(byte)) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8U;
}

}  // namespace sparsetrain
