#pragma once
// Masked-language-modelling examples for BERT pre-training, after Google's
// create_pretraining_data.py (Devlin et al. 2019): documents of sentences become instances (a
// sentence pair with a next-sentence label, or one segment without that task), and an instance
// becomes a batch row in which some tokens are hidden and must be predicted. Every random choice
// is a Philox draw: instances are a pure function of (documents, options, seed) and a row's
// masking of (Philox key, row), so batches can be rebuilt at any step on any rank. docs/data.md,
// "Masked language modelling (BERT)", states the rules.
#include <cstdint>
#include <span>
#include <vector>

#include "sparsetrain/core/ignore_target.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/data/text_corpus.h"
#include "sparsetrain/text/tokenizer.h"

namespace sparsetrain {

// Sequences shorter than this leave no room for two sentences between [CLS], [SEP] and [SEP].
inline constexpr int64_t kMinMlmSequence = 8;

struct BertSpecialTokens {
  int32_t pad = 0, cls = 0, sep = 0, mask = 0;
  int32_t vocab_size = 0;     // of the model: the tokenizer's, plus the special ids appended to it
  int32_t random_tokens = 0;  // a randomly replaced token is drawn from [0, random_tokens)
};

// A tokenizer that names [PAD], [CLS], [SEP] and [MASK] (Tokenizer::token_id) gives their ids and
// its own vocabulary; one that names none of them (byte, gpt2) gets them appended as V, V+1, V+2,
// V+3 (V its vocabulary), vocab_size V+4. Naming only some is an Error. random_tokens = V.
BertSpecialTokens bert_special_tokens(const Tokenizer& tokenizer);

// Tokenized documents, flat: sentence s is tokens[sentence_starts[s], sentence_starts[s + 1]),
// document d is sentences [document_starts[d], document_starts[d + 1]). Every sentence has a
// token and every document a sentence.
struct MlmDocuments {
  std::vector<int32_t> tokens;
  std::vector<int64_t> sentence_starts{0};  // [sentences + 1]
  std::vector<int64_t> document_starts{0};  // [documents + 1]

  int64_t documents() const { return static_cast<int64_t>(document_starts.size()) - 1; }
};

// Each document's sentences are its non-blank lines (blank lines, paragraph breaks, are skipped),
// each tokenized with its line end: WordPiece drops it as whitespace, byte-level tokenizers keep
// it as the sentence boundary. Sentences without tokens and documents without sentences are left out.
MlmDocuments tokenize_mlm_documents(const std::vector<TextDocument>& documents, const Tokenizer& tokenizer);

struct MlmOptions {
  int64_t seq = 128;             // tokens per row, >= kMinMlmSequence
  bool next_sentence = true;     // sentence pairs with next-sentence labels, else single segments
  double short_seq_prob = 0.1;   // chance that a document's instances aim at a shorter length
  int64_t max_predictions = 20;  // masked positions per row, at most (>= 1)
  double masked_lm_prob = 0.15;  // fraction of a row's tokens to predict, in (0, 1)
};

// Token ranges of MlmDocuments::tokens.
struct MlmInstance {
  int64_t a_begin = 0, a_end = 0;  // sentence A (the only segment without next-sentence pairs)
  int64_t b_begin = 0, b_end = 0;  // sentence B; empty without next-sentence pairs
  int32_t random_next = 0;         // 1: B comes from a random document; 0: B continues A
};

// The instances of every document in order, document d drawing from Philox(seed,
// "data.mlm.instances", d). With next-sentence pairs (Google's create_instances_from_document):
// each row holds seq - 3 tokens of A and B; with chance short_seq_prob a document aims at a length
// drawn from [2, seq - 3] instead; sentences are gathered until that length or the document's
// end; A is the first 1..n-1 of the n gathered (drawn); B is, with chance 1/2 or when n = 1, the
// sentences of another document from a random one until the length is reached (label 1; the
// unused gathered sentences are gathered again), else the rest of the gathered ones (label 0); the
// longer of A and B then loses a token at its front or back (drawn) until they fit. Without:
// runs of whole consecutive sentences of at most the aimed length (seq - 2, or the short one);
// a longer sentence alone is one segment, cut to seq - 2.
std::vector<MlmInstance> make_mlm_instances(const MlmDocuments& documents, const MlmOptions& options, uint64_t seed);

// Row views into a batch's arrays, [seq] each.
struct MlmRow {
  std::span<int32_t> ids, token_types, targets;
};

// Writes `instance` as one row and returns its length (tokens before the padding):
//   ids          [CLS] A [SEP] B [SEP] [PAD]...  ([CLS] A [SEP] [PAD]... without next-sentence pairs)
//   token_types  0 for [CLS] A [SEP], 1 for B [SEP], 0 for the padding
//   targets      the original id where a prediction is asked, kIgnoreTarget elsewhere
// Masking (Google's create_masked_lm_predictions without whole-word masking): of the positions
// other than [CLS], [SEP] and padding, min(max_predictions, max(1, round(length * masked_lm_prob)))
// distinct ones are drawn (round half to even, as Python's round); each becomes [MASK] with chance
// 0.8, stays with chance 0.1, else becomes an id drawn from [0, random_tokens). The draws are
// counters (row << 32) + k of `rng`, so a row's masking depends only on (rng, row).
int32_t write_mlm_row(const MlmDocuments& documents, const MlmInstance& instance, const BertSpecialTokens& special,
                      const MlmOptions& options, const Philox& rng, uint64_t row, MlmRow out);

}  // namespace sparsetrain
