#pragma once
// The tokenizer files of an exported model directory, so that its ids can be read back as text.
//   gpt2: vocab.json and merges.txt (GPT-2's encoder.json and vocab.bpe, which are these files
//         under OpenAI's names) and a tokenizer_config.json naming GPT2Tokenizer
//   wordpiece: vocab.txt (one entry per line, in BERT's spelling, line n + 1 holding id n) and a
//         tokenizer_config.json naming BertTokenizer, lower-casing, with BERT's special tokens
//   byte: byte_tokenizer.json, which says that id b (0..255) is the byte b and which id is the
//         end of text; no transformers tokenizer reads bytes this way
#include <cstdint>
#include <string>

#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

// Writes the files of `tokenizer` (by its name) into `dir`; `context` is the model's n_positions.
void write_hf_tokenizer_files(const std::string& dir, const Tokenizer& tokenizer, int64_t context);

}  // namespace sparsetrain
