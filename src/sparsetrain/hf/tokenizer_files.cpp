#include "sparsetrain/hf/tokenizer_files.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/npm_data.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/io/atomic_file.h"
#include "sparsetrain/text/gpt2_tokenizer.h"
#include "sparsetrain/text/wordpiece_tokenizer.h"

namespace sparsetrain {

namespace fs = std::filesystem;
using json = nlohmann::json;

void write_hf_tokenizer_files(const std::string& dir, const Tokenizer& tokenizer, int64_t context) {
  const fs::path out(dir);
  if (tokenizer.name() == "gpt2") {
    const fs::path package = find_npm_package_dir(Gpt2Tokenizer::kPackage);
    write_file_atomically((out / "vocab.json").string(), read_file((package / "encoder.json").string()));
    // transformers drops the last line of merges.txt unread, so the file must end in a newline.
    std::string merges = read_file((package / "vocab.bpe").string());
    if (!merges.ends_with('\n')) merges += '\n';
    write_file_atomically((out / "merges.txt").string(), merges);
    const json config = {{"tokenizer_class", "GPT2Tokenizer"}, {"model_max_length", context},
                         {"bos_token", "<|endoftext|>"},       {"eos_token", "<|endoftext|>"},
                         {"unk_token", "<|endoftext|>"},       {"add_prefix_space", false}};
    write_file_atomically((out / "tokenizer_config.json").string(), config.dump(2) + "\n");
    return;
  }
  if (tokenizer.name() == "wordpiece") {
    const auto& wordpiece = dynamic_cast<const WordPieceTokenizer&>(tokenizer);
    std::string vocab;
    for (int32_t id = 0; id < wordpiece.vocab_size(); ++id) {
      const std::string& token = wordpiece.token(id);
      if (token.find_first_of("\r\n") != std::string::npos)
        fail("export: WordPiece entry {} holds a line break, which vocab.txt cannot hold", id);
      vocab += token;
      vocab += '\n';
    }
    write_file_atomically((out / "vocab.txt").string(), vocab);
    const json config = {{"tokenizer_class", "BertTokenizer"},
                         {"do_lower_case", true},
                         {"strip_accents", nullptr},  // follows do_lower_case, as BERT's uncased rules
                         {"tokenize_chinese_chars", true},
                         {"model_max_length", context},
                         {"unk_token", "[UNK]"},
                         {"sep_token", "[SEP]"},
                         {"pad_token", "[PAD]"},
                         {"cls_token", "[CLS]"},
                         {"mask_token", "[MASK]"}};
    write_file_atomically((out / "tokenizer_config.json").string(), config.dump(2) + "\n");
    return;
  }
  if (tokenizer.name() == "byte") {
    json note = {{"tokenizer", "byte"},
                 {"vocab_size", tokenizer.vocab_size()},
                 {"ids", "id b in 0..255 is the byte b; text is the bytes of the ids, in order"}};
    if (const auto eot = tokenizer.end_of_text()) {
      note["end_of_text_id"] = *eot;
      note["ids"] = note["ids"].get<std::string>() + "; the end-of-text id separates documents and stands for no bytes";
    }
    write_file_atomically((out / "byte_tokenizer.json").string(), note.dump(2) + "\n");
    return;
  }
  fail("export: no Hugging Face files for the tokenizer '{}'", tokenizer.name());
}

}  // namespace sparsetrain
