#include "sparsetrain/text/byte_tokenizer.h"

#include "sparsetrain/core/error.h"

namespace sparsetrain {

std::vector<int32_t> ByteTokenizer::encode(std::string_view bytes) const {
  std::vector<int32_t> ids(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) ids[i] = static_cast<unsigned char>(bytes[i]);
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id >= 0 && id < 256) {
      out += static_cast<char>(static_cast<unsigned char>(id));
    } else if (!(with_end_of_text_ && id == 256)) {
      fail("byte tokenizer: id {} at position {} is outside [0, {})", id, i, vocab_size());
    }
  }
  return out;
}

}  // namespace sparsetrain
