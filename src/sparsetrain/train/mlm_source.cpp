#include "sparsetrain/train/mlm_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <optional>
#include <span>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/data/fashion_mnist.h"
#include "sparsetrain/data/mlm_examples.h"
#include "sparsetrain/dist/rank_agreement.h"
#include "sparsetrain/models/model.h"
#include "sparsetrain/train/text_documents.h"

namespace sparsetrain {

namespace {

MlmOptions mlm_options(const InputConfig& in, int64_t seq, bool next_sentence) {
  return {seq, next_sentence, in.short_seq_prob, in.max_predictions_per_seq, in.masked_lm_prob};
}

uint64_t hash_of(const MlmDocuments& docs, const std::vector<MlmInstance>& instances) {
  std::vector<int64_t> fields;  // field by field: MlmInstance has padding bytes
  fields.reserve(instances.size() * 5);
  for (const MlmInstance& in : instances)
    fields.insert(fields.end(), {in.a_begin, in.a_end, in.b_begin, in.b_end, in.random_next});
  const auto hash = [](const auto& v) { return content_hash(v.data(), v.size() * sizeof(v[0])); };
  const uint64_t parts[] = {hash(docs.tokens), hash(docs.sentence_starts), hash(docs.document_starts), hash(fields)};
  return content_hash(parts, sizeof parts);
}

class MlmSource final : public DataSource {
 public:
  MlmSource(const TrainConfig& c, int64_t max_positions, bool next_sentence, const Tokenizer& tokenizer)
      : tokenizer_(tokenizer), special_(bert_special_tokens(tokenizer)), file_(c.file) {
    const InputConfig& in = c.train_input;
    if (in.dataset == DatasetKind::FashionMnist)
      fail("{}: train_input.data: masked language modelling reads text (brown or text_file), not fashion_mnist",
           c.file);
    const int64_t seq = in.sequence_length > 0 ? in.sequence_length : max_positions;
    if (seq > max_positions)
      fail("{}: train_input.max_sequence_length ({}) is longer than the model's max_position_embeddings ({})", c.file,
           seq, max_positions);
    if (seq < kMinMlmSequence)
      fail("{}: {}: {} tokens leave no room for [CLS], two sentences and their [SEP]s; expected at least {}", c.file,
           in.sequence_length > 0 ? "train_input.max_sequence_length" : "model.max_position_embeddings", seq,
           kMinMlmSequence);
    train_options_ = mlm_options(in, seq, next_sentence);
    eval_options_ = mlm_options(c.eval_input, seq, next_sentence);
    batch_ = in.batch_size;
    eval_batch_size_ = c.eval_input.batch_size;
    name_ = text_data_name(in);
    const TextSplit split = load_text_split(c, BlankLines::Documents);
    train_docs_ = tokenize_mlm_documents(split.train, tokenizer);
    validation_docs_ = tokenize_mlm_documents(split.validation, tokenizer);
    validation_ = make_mlm_instances(validation_docs_, eval_options_, in.split_seed);
    eval_seed_ = in.split_seed;
    check_size("validation", validation_, eval_batch_size_, "eval_input");
    use_seed(c.run.seed);
    const auto n = static_cast<int64_t>(validation_.size());
    eval_batches_ = (n + eval_batch_size_ - 1) / eval_batch_size_;
    if (c.eval_input.eval_batches > 0) eval_batches_ = std::min(eval_batches_, c.eval_input.eval_batches);
  }

  void train_batch(uint64_t seed, int64_t step, Batch& out) override {
    use_seed(seed);
    const int64_t per_epoch = steps_per_epoch();
    const int64_t epoch = (step - 1) / per_epoch, index = (step - 1) % per_epoch;
    if (epoch != order_epoch_) {
      order_ = shuffled_indices(static_cast<int64_t>(train_.size()), seed, fmt::format("train.epoch.{}", epoch));
      order_epoch_ = epoch;
    }
    const RowRange mine = my_rows();
    const auto rows = std::span<const int64_t>(order_).subspan(static_cast<std::size_t>(index * batch_ + mine.begin),
                                                               static_cast<std::size_t>(mine.end - mine.begin));
    fill(out, train_docs_, train_, rows, train_options_, Philox(seed, "train.mlm.mask", static_cast<uint64_t>(step)),
         mine.begin);
    out.first_row = mine.begin;
  }
  int64_t batch_size() const override { return batch_; }
  int64_t eval_batches() const override { return eval_batches_; }
  void eval_batch(int64_t i, Batch& out) const override {
    const int64_t first = i * eval_batch_size_;
    std::vector<int64_t> rows(
        static_cast<std::size_t>(std::min(eval_batch_size_, static_cast<int64_t>(validation_.size()) - first)));
    std::iota(rows.begin(), rows.end(), first);
    fill(out, validation_docs_, validation_, rows, eval_options_, Philox(eval_seed_, "eval.mlm.mask"), first);
  }
  int64_t steps_per_epoch() const override { return static_cast<int64_t>(train_.size()) / batch_; }
  std::string describe() const override {
    const bool appended = special_.vocab_size != tokenizer_.vocab_size();
    return fmt::format(
        "{}: {} training {}, {} validation, {} tokenizer{}, sequences of {}, up to {} predictions each, {}", name_,
        with_commas(static_cast<int64_t>(train_.size())), instances_name(),
        with_commas(static_cast<int64_t>(validation_.size())), tokenizer_.name(),
        appended ? " with [PAD] [CLS] [SEP] [MASK] appended" : "", train_options_.seq, train_options_.max_predictions,
        train_options_.next_sentence ? "next-sentence pairs" : "no next-sentence task");
  }
  int64_t input_size() const override { return special_.vocab_size; }
  uint64_t fingerprint() const override {
    const uint64_t parts[] = {hash_of(train_docs_, train_),
                              hash_of(validation_docs_, validation_),
                              static_cast<uint64_t>(train_options_.seq),
                              train_options_.next_sentence ? 1u : 0u,
                              static_cast<uint64_t>(train_options_.max_predictions),
                              static_cast<uint64_t>(eval_options_.max_predictions),
                              std::bit_cast<uint64_t>(train_options_.masked_lm_prob),
                              std::bit_cast<uint64_t>(eval_options_.masked_lm_prob)};
    return content_hash(parts, sizeof parts);
  }

 private:
  const char* instances_name() const { return train_options_.next_sentence ? "sequence pairs" : "sequences"; }

  void check_size(const char* split, const std::vector<MlmInstance>& instances, int64_t batch,
                  const char* section) const {
    if (static_cast<int64_t>(instances.size()) < batch)
      fail("{}: {}: the {} split makes {} {}, fewer than one batch of {} ({}.batch_size)", file_, name_, split,
           instances.size(), instances_name(), batch, section);
  }

  // The training instances of `seed`: built for the config's seed, again for another one.
  void use_seed(uint64_t seed) {
    if (train_seed_ == seed) return;
    train_ = make_mlm_instances(train_docs_, train_options_, seed);
    check_size("training", train_, batch_, "train_input");
    train_seed_ = seed;
    order_epoch_ = -1;
  }

  // Rows of instances[picks[r]], row r masked at counter row first_key + r of `rng`.
  void fill(Batch& out, const MlmDocuments& docs, const std::vector<MlmInstance>& instances,
            std::span<const int64_t> picks, const MlmOptions& options, const Philox& rng, int64_t first_key) const {
    const auto rows = static_cast<int64_t>(picks.size());
    const auto seq = static_cast<std::size_t>(options.seq);
    out.rows = rows;
    out.seq = options.seq;
    out.first_row = 0;
    out.ids.resize(picks.size() * seq);
    out.token_types.resize(out.ids.size());
    out.targets.resize(out.ids.size());
    out.lengths.resize(picks.size());
    out.nsp_labels.resize(options.next_sentence ? picks.size() : 0);
    for (std::size_t r = 0; r < picks.size(); ++r) {
      const MlmInstance& instance = instances[static_cast<std::size_t>(picks[r])];
      const MlmRow row{std::span(out.ids).subspan(r * seq, seq), std::span(out.token_types).subspan(r * seq, seq),
                       std::span(out.targets).subspan(r * seq, seq)};
      out.lengths[r] = write_mlm_row(docs, instance, special_, options, rng, static_cast<uint64_t>(first_key) + r, row);
      if (options.next_sentence) out.nsp_labels[r] = instance.random_next;
    }
  }

  const Tokenizer& tokenizer_;
  BertSpecialTokens special_;
  std::string file_, name_;
  MlmOptions train_options_, eval_options_;
  int64_t batch_ = 0, eval_batch_size_ = 0, eval_batches_ = 0;
  MlmDocuments train_docs_, validation_docs_;
  std::vector<MlmInstance> train_, validation_;
  std::optional<uint64_t> train_seed_;
  uint64_t eval_seed_ = 0;
  std::vector<int64_t> order_;
  int64_t order_epoch_ = -1;
};

}  // namespace

std::unique_ptr<DataSource> make_mlm_data_source(const TrainConfig& config, int64_t max_positions, bool next_sentence,
                                                 const Tokenizer& tokenizer) {
  return std::make_unique<MlmSource>(config, max_positions, next_sentence, tokenizer);
}

}  // namespace sparsetrain
