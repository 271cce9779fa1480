#include "sparsetrain/data/mlm_examples.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// Consecutive draws of one Philox stream, as Python's random module is used by the reference.
class Draws {
 public:
  explicit Draws(Philox rng) : rng_(rng) {}
  // Uniform in [lo, hi], both included (random.randint).
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_.below(next_++, static_cast<uint64_t>(hi - lo + 1)));
  }
  bool chance(double p) { return rng_.uniform(next_++) < p; }

 private:
  Philox rng_;
  uint64_t next_ = 0;
};

// Google's create_instances_from_document, over sentence indices [first, end) of `docs`.
void sentence_pairs(const MlmDocuments& docs, int64_t d, int64_t max_tokens, int64_t target, Draws& draw,
                    std::vector<MlmInstance>& out) {
  const std::vector<int64_t>& at = docs.sentence_starts;
  const int64_t first = docs.document_starts[d], end = docs.document_starts[d + 1];
  int64_t chunk_begin = first;
  for (int64_t s = first; s < end; ++s) {
    if (s + 1 < end && at[s + 1] - at[chunk_begin] < target) continue;
    const int64_t chunk = s + 1 - chunk_begin;
    const int64_t a_sentences = chunk >= 2 ? draw.between(1, chunk - 1) : 1;
    MlmInstance in;
    in.a_begin = at[chunk_begin];
    in.a_end = at[chunk_begin + a_sentences];
    if (chunk == 1 || draw.chance(0.5)) {
      in.random_next = 1;
      const int64_t b_target = target - (in.a_end - in.a_begin);
      int64_t other = d;  // a single document can only pair with itself
      if (docs.documents() > 1) {
        other = draw.between(0, docs.documents() - 2);
        other += other >= d ? 1 : 0;
      }
      const int64_t other_end = docs.document_starts[other + 1];
      int64_t j = draw.between(docs.document_starts[other], other_end - 1);
      in.b_begin = at[j];
      do in.b_end = at[++j];
      while (j < other_end && in.b_end - in.b_begin < b_target);
      s -= chunk - a_sentences;  // B did not use them: they start the next chunk
    } else {
      in.b_begin = in.a_end;
      in.b_end = at[s + 1];
    }
    // truncate_seq_pair: the longer side loses a token at its front or back.
    while ((in.a_end - in.a_begin) + (in.b_end - in.b_begin) > max_tokens) {
      const bool a = in.a_end - in.a_begin > in.b_end - in.b_begin;
      if (draw.chance(0.5))
        ++(a ? in.a_begin : in.b_begin);
      else
        --(a ? in.a_end : in.b_end);
    }
    out.push_back(in);
    chunk_begin = s + 1;
  }
}

// Runs of whole sentences of at most `target` tokens; a longer sentence alone, cut to max_tokens.
void single_segments(const MlmDocuments& docs, int64_t d, int64_t max_tokens, int64_t target,
                     std::vector<MlmInstance>& out) {
  const std::vector<int64_t>& at = docs.sentence_starts;
  const int64_t first = docs.document_starts[d], end = docs.document_starts[d + 1];
  int64_t begin = first;
  for (int64_t s = first; s <= end; ++s) {
    const bool full = s == end || (s > begin && at[s + 1] - at[begin] > target);
    if (!full) continue;
    MlmInstance in;
    in.a_begin = at[begin];
    in.a_end = std::min(at[s], in.a_begin + max_tokens);
    in.b_begin = in.b_end = in.a_end;
    out.push_back(in);
    begin = s;
  }
}

}  // namespace

BertSpecialTokens bert_special_tokens(const Tokenizer& tokenizer) {
  constexpr std::array<const char*, 4> names = {"[PAD]", "[CLS]", "[SEP]", "[MASK]"};
  std::array<std::optional<int32_t>, 4> ids;
  for (std::size_t i = 0; i < names.size(); ++i) ids[i] = tokenizer.token_id(names[i]);
  const auto named = std::count_if(ids.begin(), ids.end(), [](const auto& id) { return id.has_value(); });
  const int32_t v = tokenizer.vocab_size();
  BertSpecialTokens special;
  if (named == 0) {
    special = {v, v + 1, v + 2, v + 3, v + 4, v};
  } else if (named == 4) {
    special = {*ids[0], *ids[1], *ids[2], *ids[3], v, v};
  } else {
    std::string missing;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (!ids[i]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", names[i]);
    fail(
        "{} tokenizer: its vocabulary lacks {}: expected all of [PAD], [CLS], [SEP] and [MASK] (a BERT vocabulary) "
        "or none (they are then appended)",
        tokenizer.name(), missing);
  }
  return special;
}

MlmDocuments tokenize_mlm_documents(const std::vector<TextDocument>& documents, const Tokenizer& tokenizer) {
  MlmDocuments out;
  for (const TextDocument& d : documents) {
    const std::string_view text = d.text;
    for (std::size_t start = 0; start < text.size();) {
      std::size_t end = text.find('\n', start);
      const bool has_end = end != std::string_view::npos;
      end = has_end ? end + 1 : text.size();
      const std::string_view line = text.substr(start, end - start);
      start = end;
      if (is_blank(line.substr(0, has_end ? line.size() - 1 : line.size()))) continue;
      const std::vector<int32_t> ids = tokenizer.encode(has_end ? line : std::string(line) + '\n');
      if (ids.empty()) continue;
      out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
      out.sentence_starts.push_back(static_cast<int64_t>(out.tokens.size()));
    }
    const auto sentences = static_cast<int64_t>(out.sentence_starts.size()) - 1;
    if (sentences > out.document_starts.back()) out.document_starts.push_back(sentences);
  }
  return out;
}

std::vector<MlmInstance> make_mlm_instances(const MlmDocuments& documents, const MlmOptions& options, uint64_t seed) {
  if (options.seq < kMinMlmSequence)
    fail("make_mlm_instances: sequences of {} tokens: expected at least {}", options.seq, kMinMlmSequence);
  const int64_t max_tokens = options.seq - (options.next_sentence ? 3 : 2);
  std::vector<MlmInstance> out;
  for (int64_t d = 0; d < documents.documents(); ++d) {
    Draws draw(Philox(seed, "data.mlm.instances", static_cast<uint64_t>(d)));
    // Once per document, as the reference does: mostly full rows, sometimes shorter ones, so that
    // pre-training also sees the short sequences fine-tuning gives.
    const int64_t target = draw.chance(options.short_seq_prob) ? draw.between(2, max_tokens) : max_tokens;
    if (options.next_sentence)
      sentence_pairs(documents, d, max_tokens, target, draw, out);
    else
      single_segments(documents, d, max_tokens, target, out);
  }
  return out;
}

int32_t write_mlm_row(const MlmDocuments& documents, const MlmInstance& instance, const BertSpecialTokens& special,
                      const MlmOptions& options, const Philox& rng, uint64_t row, MlmRow out) {
  const int64_t a = instance.a_end - instance.a_begin, b = instance.b_end - instance.b_begin;
  const int64_t length = 2 + a + (options.next_sentence ? b + 1 : 0);
  if (length > options.seq)
    fail("write_mlm_row: an instance of {} tokens does not fit a row of {}", length, options.seq);
  std::vector<int64_t> candidates;  // positions that may be masked
  std::size_t n = 0;
  const auto segment = [&](int64_t begin, int64_t end, int32_t type) {
    for (int64_t t = begin; t < end; ++t, ++n) {
      candidates.push_back(static_cast<int64_t>(n));
      out.ids[n] = documents.tokens[static_cast<std::size_t>(t)];
      out.token_types[n] = type;
    }
    out.ids[n] = special.sep;
    out.token_types[n++] = type;
  };
  out.ids[n] = special.cls;
  out.token_types[n++] = 0;
  segment(instance.a_begin, instance.a_end, 0);
  if (options.next_sentence) segment(instance.b_begin, instance.b_end, 1);
  std::fill(out.ids.begin() + length, out.ids.end(), special.pad);
  std::fill(out.token_types.begin() + length, out.token_types.end(), 0);
  std::fill(out.targets.begin(), out.targets.end(), kIgnoreTarget);

  // nearbyint rounds half to even under the default rounding mode, as Python's round does.
  const auto wanted = static_cast<int64_t>(std::nearbyint(static_cast<double>(length) * options.masked_lm_prob));
  const int64_t predictions =
      std::min({options.max_predictions, std::max<int64_t>(1, wanted), static_cast<int64_t>(candidates.size())});
  const uint64_t base = row << 32;
  uint64_t k = 0;
  const auto m = static_cast<uint64_t>(candidates.size());
  for (uint64_t i = 0; i < static_cast<uint64_t>(predictions); ++i) {
    std::swap(candidates[i], candidates[i + rng.below(base + k++, m - i)]);  // a partial Fisher-Yates shuffle
    const auto p = static_cast<std::size_t>(candidates[i]);
    out.targets[p] = out.ids[p];
    const float u = rng.uniform(base + k++);
    if (u < 0.8f)
      out.ids[p] = special.mask;
    else if (u >= 0.9f)
      out.ids[p] = static_cast<int32_t>(rng.below(base + k++, static_cast<uint64_t>(special.random_tokens)));
  }
  return static_cast<int32_t>(length);
}

}  // namespace sparsetrain
