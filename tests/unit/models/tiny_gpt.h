#pragma once
// The GPT the model tests run: 2 layers, 2 heads, width 12, context 7, vocabulary 13.
#include "sparsetrain/models/gpt.h"

namespace sparsetrain {

inline GptConfig tiny_gpt() {
  GptConfig c;
  c.vocab_size = 13;
  c.context = 7;
  c.layers = 2;
  c.heads = 2;
  c.embed = 12;
  c.init_std = 0.3;  // large enough that every path carries a gradient well above float noise
  return c;
}

}  // namespace sparsetrain
