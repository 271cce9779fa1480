#pragma once
// The documents of a text config, split for training and validation: shared by the sources that
// read text (train/data_source.cpp, train/mlm_source.cpp). docs/data.md describes the splits.
#include "sparsetrain/config/train_config.h"
#include "sparsetrain/data/text_corpus.h"

namespace sparsetrain {

// What a file's blank lines are: breaks between paragraphs of its one document, or between
// documents (BERT's pre-training input format).
enum class BlankLines { Paragraphs, Documents };

// train_input's documents: Brown's (only those of its categories, none of the excluded ones), or
// the text file's (one, or split at blank lines). Several documents are split by
// split_documents(validation_fraction, split_seed), one by split_text. A category no document
// has is an Error naming config.file and the key.
TextSplit load_text_split(const TrainConfig& config, BlankLines blank_lines);

// "brown" or the text file's path, for describe() lines.
std::string text_data_name(const InputConfig& input);

}  // namespace sparsetrain
