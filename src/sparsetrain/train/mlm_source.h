#pragma once
// Batches for BERT pre-training: masked-language-modelling rows (data/mlm_examples.h) over the
// documents of a text config, as pure functions of (seed, step) like every DataSource.
//
//   training    instances are built once from the training documents, keyed by the run's seed;
//               epochs of floor(instances / batch_size) steps, epoch e visiting them in the order
//               shuffled_indices(instances, seed, "train.epoch.<e>"). Masking is drawn anew every
//               step (dynamic masking) from Philox(seed, "train.mlm.mask", step), row r of the
//               global batch from counters (r << 32) + k, so a data-parallel rank masks its rows
//               exactly as one process would.
//   evaluation  instances of the validation documents keyed by train_input.split_seed and masked
//               by Philox(split_seed, "eval.mlm.mask") at the instance's index: every run with
//               that split evaluates on the same rows, whatever its seed.
#include <cstdint>
#include <memory>

#include "sparsetrain/config/train_config.h"
#include "sparsetrain/text/tokenizer.h"
#include "sparsetrain/train/data_source.h"

namespace sparsetrain {

// The datasets of train_input (brown with its categories, or a text file whose blank lines
// separate documents; a file without blank lines is one document, split by split_text) encoded by
// `tokenizer` (which must outlive the source). Rows hold train_input.max_sequence_length tokens,
// or `max_positions` (the model's max_position_embeddings) when that is 0; `next_sentence`: sentence
// pairs with next-sentence labels, else single segments and no labels. Training rows take
// train_input's max_predictions_per_seq, masked_lm_prob and short_seq_prob, evaluation rows
// eval_input's. input_size() is BertSpecialTokens::vocab_size. Errors: a sequence shorter than
// kMinMlmSequence or longer than max_positions, a split with fewer instances than one batch.
std::unique_ptr<DataSource> make_mlm_data_source(const TrainConfig& config, int64_t max_positions, bool next_sentence,
                                                 const Tokenizer& tokenizer);

}  // namespace sparsetrain
