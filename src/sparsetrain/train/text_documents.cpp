#include "sparsetrain/train/text_documents.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

// The documents of in.categories (all when empty) that are not in in.exclude_categories. A name
// no document has is an Error listing the corpus's categories: a typo must not silently select
// nothing or everything.
std::vector<TextDocument> select_categories(std::vector<TextDocument> docs, const InputConfig& in,
                                            const std::string& file) {
  if (in.categories.empty() && in.exclude_categories.empty()) return docs;
  std::set<std::string> known;
  for (const TextDocument& d : docs) known.insert(d.category);
  for (const auto* list : {&in.categories, &in.exclude_categories})
    for (const std::string& name : *list)
      if (!known.contains(name))
        fail("{}: train_input.{}: no Brown document has the category '{}'; the corpus has {}", file,
             list == &in.categories ? "categories" : "exclude_categories", name, fmt::join(known, ", "));
  const auto listed = [](const std::vector<std::string>& list, const std::string& c) {
    return std::find(list.begin(), list.end(), c) != list.end();
  };
  std::erase_if(docs, [&](const TextDocument& d) {
    return (!in.categories.empty() && !listed(in.categories, d.category)) || listed(in.exclude_categories, d.category);
  });
  if (docs.empty()) fail("{}: train_input: the categories select no Brown document", file);
  return docs;
}

}  // namespace

TextSplit load_text_split(const TrainConfig& config, BlankLines blank_lines) {
  const InputConfig& in = config.train_input;
  std::vector<TextDocument> docs;
  if (in.dataset == DatasetKind::Brown) {
    docs = select_categories(in.path.empty() ? load_brown_corpus() : load_brown_corpus(in.path), in, config.file);
  } else {
    TextDocument file = load_text_file(in.path);
    if (blank_lines == BlankLines::Documents) docs = split_at_blank_lines(file);
    if (docs.size() <= 1) docs = {std::move(file)};
  }
  if (docs.size() > 1) return split_documents(docs, in.validation_fraction, in.split_seed);
  try {
    return split_text(docs[0], in.validation_fraction);
  } catch (const Error& e) {
    fail("{}: train_input.validation_fraction: {}", config.file, e.what());  // a file too short for the fraction
  }
}

std::string text_data_name(const InputConfig& input) {
  return input.dataset == DatasetKind::Brown ? "brown" : input.path;
}

}  // namespace sparsetrain
