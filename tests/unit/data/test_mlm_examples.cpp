#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "error_of.h"
#include "sparsetrain/data/mlm_examples.h"
#include "sparsetrain/text/byte_tokenizer.h"

namespace sparsetrain {
namespace {

using testing::error_of;

const ByteTokenizer kBytes(/*with_end_of_text=*/true);  // 257 ids: [PAD] [CLS] [SEP] [MASK] are 257..260

// Documents whose sentences name themselves: "d03s017" then `extra(d, s)` times " x", then '\n'.
template <typename Extra>
std::vector<TextDocument> named_documents(int documents, int sentences, Extra extra) {
  std::vector<TextDocument> docs;
  for (int d = 0; d < documents; ++d) {
    std::string text;
    for (int s = 0; s < sentences; ++s) {
      text += fmt::format("d{:02}s{:03}", d, s);
      for (int x = 0; x < extra(d, s); ++x) text += " x";
      text += s % 7 == 6 ? "\n\n" : "\n";  // a paragraph break now and then
    }
    docs.push_back({fmt::format("doc{}", d), "", text});
  }
  return docs;
}

// Sentences of 2 to 22 tokens, a few of 60 to 90 (longer than the rows below).
std::vector<TextDocument> varied_documents() {
  return named_documents(24, 50,
                         [](int d, int s) { return (d * 7 + s * 13) % 37 == 0 ? 30 + s % 16 : (d + s * 3) % 8; });
}

// A row as written, with the original token back at every masked position.
struct Row {
  std::vector<int32_t> ids, types, targets, original;
  int32_t length = 0;
};

Row write_row(const MlmDocuments& docs, const MlmInstance& in, const MlmOptions& o, const Philox& rng, uint64_t key,
              const BertSpecialTokens& special) {
  Row r;
  const auto seq = static_cast<std::size_t>(o.seq);
  r.ids.assign(seq, -1);
  r.types.assign(seq, -1);
  r.targets.assign(seq, -1);
  r.length = write_mlm_row(docs, in, special, o, rng, key, {r.ids, r.types, r.targets});
  r.original = r.ids;
  for (std::size_t p = 0; p < seq; ++p)
    if (r.targets[p] != kIgnoreTarget) r.original[p] = r.targets[p];
  return r;
}

// The text between the k-th and (k+1)-th special token of a row's original ids.
std::string segment_text(const Row& r, int k) {
  std::string text;
  int seen = 0;
  for (int32_t p = 0; p < r.length; ++p) {
    if (r.original[p] >= 256) {
      if (++seen > k + 1) break;
      continue;
    }
    if (seen == k + 1) text += static_cast<char>(r.original[p]);
  }
  return text;
}

// "d03s017 x x\nd03s018\n" -> {(3, 17), (3, 18)}: the sentences a segment holds whole at its start.
std::vector<std::pair<int, int>> sentence_names(const std::string& text) {
  std::vector<std::pair<int, int>> names;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end;
    int d = 0, s = 0;
    if (std::sscanf(text.c_str() + at, "d%2ds%3d", &d, &s) == 2) names.emplace_back(d, s);
    at = end + 1;
  }
  return names;
}

// Python's round(): half to even.
int64_t round_half_even(double x) {
  const double f = std::floor(x);
  if (x - f != 0.5) return static_cast<int64_t>(std::floor(x + 0.5));
  return static_cast<int64_t>(static_cast<int64_t>(f) % 2 == 0 ? f : f + 1);
}

// A tokenizer with named vocabulary entries, as WordPiece has.
class NamedTokenizer final : public Tokenizer {
 public:
  explicit NamedTokenizer(std::map<std::string, int32_t> names) : names_(std::move(names)) {}
  std::vector<int32_t> encode(std::string_view utf8) const override { return kBytes.encode(utf8); }
  std::string decode(std::span<const int32_t> ids) const override { return kBytes.decode(ids); }
  int32_t vocab_size() const override { return 300; }
  std::string name() const override { return "named"; }
  std::optional<int32_t> end_of_text() const override { return std::nullopt; }
  std::optional<int32_t> token_id(std::string_view token) const override {
    const auto it = names_.find(std::string(token));
    return it == names_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

 private:
  std::map<std::string, int32_t> names_;
};

TEST(BertSpecialTokens, AppendedToATokenizerWithoutThem) {
  const BertSpecialTokens s = bert_special_tokens(kBytes);
  EXPECT_EQ(s.pad, 257);
  EXPECT_EQ(s.cls, 258);
  EXPECT_EQ(s.sep, 259);
  EXPECT_EQ(s.mask, 260);
  EXPECT_EQ(s.vocab_size, 261);
  EXPECT_EQ(s.random_tokens, 257);
  EXPECT_EQ(bert_special_tokens(ByteTokenizer()).vocab_size, 260);
}

TEST(BertSpecialTokens, NamedOnesAreUsed) {
  const BertSpecialTokens s =
      bert_special_tokens(NamedTokenizer({{"[PAD]", 0}, {"[CLS]", 101}, {"[SEP]", 102}, {"[MASK]", 103}}));
  EXPECT_EQ(s.pad, 0);
  EXPECT_EQ(s.cls, 101);
  EXPECT_EQ(s.sep, 102);
  EXPECT_EQ(s.mask, 103);
  EXPECT_EQ(s.vocab_size, 300);
  EXPECT_EQ(s.random_tokens, 300);
}

TEST(BertSpecialTokens, SomeNamedIsAnError) {
  EXPECT_EQ(error_of([] {
              bert_special_tokens(NamedTokenizer({{"[CLS]", 1}, {"[SEP]", 2}}));
            }),
            "named tokenizer: its vocabulary lacks [PAD], [MASK]: expected all of [PAD], [CLS], [SEP] and [MASK] (a "
            "BERT vocabulary) or none (they are then appended)");
}

TEST(MlmDocuments, SentencesAreNonBlankLinesWithTheirLineEnd) {
  const std::vector<TextDocument> docs = {
      {"a", "", "One.\n\n  \nTwo two.\n"}, {"empty", "", "\n \t\n"}, {"b", "", "Three"}};
  const MlmDocuments m = tokenize_mlm_documents(docs, kBytes);
  EXPECT_EQ(kBytes.decode(m.tokens), "One.\nTwo two.\nThree\n");
  EXPECT_EQ(m.sentence_starts, (std::vector<int64_t>{0, 5, 14, 20}));
  EXPECT_EQ(m.document_starts, (std::vector<int64_t>{0, 2, 3}));  // "empty" has no sentence
  EXPECT_EQ(m.documents(), 2);
}

// Sentences of exactly 8 tokens and rows of 4 sentences: gathering stops at exactly seq - 3 tokens
// (or a document's end), so no row is truncated and every sentence of a row is whole.
TEST(MlmInstances, PairsContinueTheirDocumentOrComeFromAnother) {
  const MlmDocuments docs = tokenize_mlm_documents(named_documents(60, 100, [](int, int) { return 0; }), kBytes);
  MlmOptions o;
  o.seq = 4 * 8 + 3;
  o.short_seq_prob = 0.0;
  const std::vector<MlmInstance> instances = make_mlm_instances(docs, o, 7);
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  const Philox rng(1, "test.mask");
  int64_t random_next = 0;
  std::pair<int, int> next = {0, 0};  // the sentence the next row starts with
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const Row r = write_row(docs, instances[i], o, rng, i, special);
    const std::vector<std::pair<int, int>> a = sentence_names(segment_text(r, 0)),
                                           b = sentence_names(segment_text(r, 1));
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    EXPECT_LE(static_cast<int64_t>(8 * (a.size() + b.size())), o.seq - 3);  // less only at a document's end
    for (const auto* names : {&a, &b})
      for (std::size_t k = 1; k < names->size(); ++k)
        EXPECT_EQ((*names)[k], std::make_pair((*names)[k - 1].first, (*names)[k - 1].second + 1));
    // Each document's rows take its sentences in order; a random B leaves the rest of its chunk
    // to the next row.
    EXPECT_EQ(a.front(), a.front().first == next.first ? next : std::make_pair(a.front().first, 0)) << "row " << i;
    if (instances[i].random_next == 0) {
      EXPECT_EQ(b.front(), std::make_pair(a.back().first, a.back().second + 1)) << "row " << i;
      next = {b.back().first, b.back().second + 1};
    } else {
      EXPECT_NE(b.front().first, a.back().first) << "row " << i;
      next = {a.back().first, a.back().second + 1};
      ++random_next;
    }
  }
  // Half are random, plus the documents' last chunks of one sentence, which must be.
  const auto n = static_cast<double>(instances.size());
  EXPECT_GT(n, 1000);
  EXPECT_NEAR(static_cast<double>(random_next) / n, 0.5, 4 * std::sqrt(0.25 / n) + 60 / n);
}

TEST(MlmInstances, VariedSentencesFitAndStayInTheirDocuments) {
  const std::vector<TextDocument> texts = varied_documents();
  const MlmDocuments docs = tokenize_mlm_documents(texts, kBytes);
  std::vector<std::string> sentences;  // each document's text without its paragraph breaks
  for (const TextDocument& d : texts) {
    sentences.push_back(d.text);
    for (std::size_t at; (at = sentences.back().find("\n\n")) != std::string::npos;) sentences.back().erase(at, 1);
  }
  MlmOptions o;
  o.seq = 48;
  const std::vector<MlmInstance> instances = make_mlm_instances(docs, o, 3);
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  const Philox rng(1, "test.mask");
  int front_cut = 0, back_cut = 0;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const Row r = write_row(docs, instances[i], o, rng, i, special);
    const std::string a = segment_text(r, 0), b = segment_text(r, 1);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    EXPECT_LE(a.size() + b.size(), static_cast<std::size_t>(o.seq - 3));
    front_cut += a.front() != 'd' || b.front() != 'd';
    back_cut += a.back() != '\n' || b.back() != '\n';
    // A segment cut down to " x x" names no document; one that names a sentence is found there.
    const std::vector<std::pair<int, int>> a_names = sentence_names(a), b_names = sentence_names(b);
    if (a_names.empty() || b_names.empty()) continue;
    const std::string& a_doc = sentences[a_names.front().first];
    const std::size_t a_at = a_doc.find(a);
    ASSERT_NE(a_at, std::string::npos) << "row " << i;
    ASSERT_NE(sentences[b_names.front().first].find(b), std::string::npos) << "row " << i;
    // B continues A, but for what the truncation took from A's back or B's front.
    if (instances[i].random_next == 1)
      EXPECT_NE(b_names.front().first, a_names.front().first) << "row " << i;
    else
      EXPECT_NE(a_doc.find(b, a_at + a.size()), std::string::npos) << "row " << i;
  }
  EXPECT_GT(front_cut, 0);
  EXPECT_GT(back_cut, 0);
}

TEST(MlmInstances, ShortSequenceChance) {
  const MlmDocuments docs = tokenize_mlm_documents(varied_documents(), kBytes);
  MlmOptions o;
  o.seq = 64;
  const auto mean_length = [&](double p) {
    o.short_seq_prob = p;
    const std::vector<MlmInstance> instances = make_mlm_instances(docs, o, 5);
    double sum = 0;
    for (const MlmInstance& in : instances) sum += static_cast<double>(in.a_end - in.a_begin + in.b_end - in.b_begin);
    return sum / static_cast<double>(instances.size());
  };
  EXPECT_GT(mean_length(0.0), 0.9 * static_cast<double>(o.seq - 3));
  EXPECT_LT(mean_length(1.0), 0.75 * static_cast<double>(o.seq - 3));  // uniform in [2, seq - 3]: about half
}

TEST(MlmInstances, DependOnlyOnTheSeed) {
  const MlmDocuments docs = tokenize_mlm_documents(varied_documents(), kBytes);
  const MlmOptions o;
  const auto fields = [&](uint64_t seed) {
    std::vector<int64_t> out;
    for (const MlmInstance& in : make_mlm_instances(docs, o, seed))
      out.insert(out.end(), {in.a_begin, in.a_end, in.b_begin, in.b_end, in.random_next});
    return out;
  };
  EXPECT_EQ(fields(4), fields(4));
  EXPECT_NE(fields(4), fields(5));
}

// Without next-sentence pairs: the segments of a document are its sentences in order, gathered
// whole while they fit seq - 2 tokens; a longer sentence alone, cut there.
TEST(MlmInstances, SingleSegments) {
  const std::vector<TextDocument> texts = varied_documents();
  const MlmDocuments docs = tokenize_mlm_documents(texts, kBytes);
  MlmOptions o;
  o.seq = 40;
  o.next_sentence = false;
  o.short_seq_prob = 0.0;
  const std::vector<MlmInstance> instances = make_mlm_instances(docs, o, 2);
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  std::vector<std::string> expected, got;
  for (const TextDocument& d : texts) {
    std::string segment;
    for (std::size_t at = 0; at < d.text.size();) {
      const std::size_t end = d.text.find('\n', at) + 1;
      const std::string sentence = d.text.substr(at, end - at);
      at = end;
      if (sentence == "\n") continue;
      if (!segment.empty() && segment.size() + sentence.size() > 38) expected.push_back(std::exchange(segment, ""));
      segment += sentence;
      if (segment.size() > 38) expected.push_back(std::exchange(segment, "").substr(0, 38));
    }
    if (!segment.empty()) expected.push_back(segment);
  }
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const Row r = write_row(docs, instances[i], o, Philox(0, "test.mask"), i, special);
    EXPECT_EQ(r.original[0], special.cls);
    EXPECT_EQ(r.original[r.length - 1], special.sep);
    EXPECT_TRUE(std::all_of(r.types.begin(), r.types.end(), [](int32_t t) { return t == 0; }));
    got.push_back(segment_text(r, 0));
  }
  EXPECT_EQ(got, expected);
}

TEST(MlmRows, Layout) {
  const MlmDocuments docs = tokenize_mlm_documents(varied_documents(), kBytes);
  MlmOptions o;
  o.seq = 37;
  const std::vector<MlmInstance> instances = make_mlm_instances(docs, o, 11);
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const MlmInstance& in = instances[i];
    const Row r = write_row(docs, in, o, Philox(2, "test.mask"), i, special);
    // [CLS] A [SEP] B [SEP] [PAD]..., from the documents' tokens.
    std::vector<int32_t> want = {special.cls};
    want.insert(want.end(), docs.tokens.begin() + in.a_begin, docs.tokens.begin() + in.a_end);
    want.push_back(special.sep);
    const auto b_at = static_cast<int32_t>(want.size());
    want.insert(want.end(), docs.tokens.begin() + in.b_begin, docs.tokens.begin() + in.b_end);
    want.push_back(special.sep);
    ASSERT_EQ(r.length, static_cast<int32_t>(want.size()));
    ASSERT_LE(r.length, o.seq);
    want.resize(static_cast<std::size_t>(o.seq), special.pad);
    EXPECT_EQ(r.original, want) << "row " << i;
    for (int32_t p = 0; p < o.seq; ++p) {
      EXPECT_EQ(r.types[p], p >= b_at && p < r.length ? 1 : 0) << "row " << i << " position " << p;
      const bool special_position = p == 0 || p == b_at - 1 || p >= r.length - 1;
      if (special_position) {
        EXPECT_EQ(r.targets[p], kIgnoreTarget) << "row " << i << " position " << p;
      }
      if (r.targets[p] == kIgnoreTarget) {
        EXPECT_EQ(r.ids[p], want[p]);
      }
    }
  }
}

TEST(MlmRows, MaskingStatistics) {
  const MlmDocuments docs = tokenize_mlm_documents(varied_documents(), kBytes);
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  for (const int64_t cap : {1000, 5}) {
    MlmOptions o;
    o.seq = 64;
    o.max_predictions = cap;
    const std::vector<MlmInstance> instances = make_mlm_instances(docs, o, 1);
    const Philox rng(9, "train.mlm.mask", 3);
    int64_t predicted = 0, masked = 0, kept = 0, replaced = 0, tokens = 0;
    for (uint64_t pass = 0; pass < 4; ++pass)
      for (std::size_t i = 0; i < instances.size(); ++i) {
        const Row r = write_row(docs, instances[i], o, rng, pass * instances.size() + i, special);
        int64_t row_predictions = 0;
        for (int32_t p = 0; p < o.seq; ++p) {
          if (r.targets[p] == kIgnoreTarget) continue;
          ++row_predictions;
          if (r.ids[p] == special.mask) {
            ++masked;
          } else if (r.ids[p] == r.targets[p]) {
            ++kept;
          } else {
            ++replaced;
            EXPECT_LT(r.ids[p], special.random_tokens);
            EXPECT_GE(r.ids[p], 0);
          }
        }
        EXPECT_EQ(row_predictions, std::min(cap, std::max<int64_t>(1, round_half_even(r.length * 0.15))));
        predicted += row_predictions;
        tokens += r.length;
      }
    if (cap == 1000) {
      EXPECT_NEAR(static_cast<double>(predicted) / static_cast<double>(tokens), 0.15, 0.01);
    }
    const auto n = static_cast<double>(predicted);
    const auto within = [&](int64_t count, double p) {
      EXPECT_NEAR(static_cast<double>(count) / n, p, 4 * std::sqrt(p * (1 - p) / n)) << "cap " << cap;
    };
    within(masked, 0.8);
    within(kept, 0.1 + 0.1 / 257);  // a random id may be the original one
    within(replaced, 0.1 - 0.1 / 257);
  }
}

// Every maskable position is chosen equally often: rows of one full length, 2,000 maskings each.
TEST(MlmRows, MaskedPositionsAreUniform) {
  const MlmDocuments docs = tokenize_mlm_documents(named_documents(2, 40, [](int, int) { return 0; }), kBytes);
  MlmOptions o;
  o.seq = 35;
  o.short_seq_prob = 0.0;
  const MlmInstance in = make_mlm_instances(docs, o, 1).front();
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  std::vector<int> chosen(static_cast<std::size_t>(o.seq), 0);
  const int rows = 2000;
  for (int i = 0; i < rows; ++i) {
    const Row r = write_row(docs, in, o, Philox(4, "test.mask"), static_cast<uint64_t>(i), special);
    ASSERT_EQ(r.length, o.seq);
    for (int32_t p = 0; p < o.seq; ++p) chosen[p] += r.targets[p] != kIgnoreTarget;
  }
  const double p = 5.0 / 32;  // round(35 * 0.15) = 5 of the 32 maskable positions
  const int a_sep = static_cast<int>(in.a_end - in.a_begin) + 1;
  for (int q = 0; q < o.seq; ++q) {
    if (q == 0 || q == a_sep || q == o.seq - 1) {
      EXPECT_EQ(chosen[q], 0) << "position " << q;
      continue;
    }
    EXPECT_NEAR(chosen[q] / double{rows}, p, 4 * std::sqrt(p * (1 - p) / rows)) << "position " << q;
  }
}

TEST(MlmRows, MaskingDependsOnTheRowAndTheStream) {
  const MlmDocuments docs = tokenize_mlm_documents(varied_documents(), kBytes);
  const MlmOptions o;
  const MlmInstance in = make_mlm_instances(docs, o, 1).front();
  const BertSpecialTokens special = bert_special_tokens(kBytes);
  const auto ids = [&](const Philox& rng, uint64_t row) { return write_row(docs, in, o, rng, row, special).ids; };
  EXPECT_EQ(ids(Philox(1, "train.mlm.mask", 5), 3), ids(Philox(1, "train.mlm.mask", 5), 3));
  EXPECT_NE(ids(Philox(1, "train.mlm.mask", 5), 3), ids(Philox(1, "train.mlm.mask", 5), 4));
  EXPECT_NE(ids(Philox(1, "train.mlm.mask", 5), 3), ids(Philox(1, "train.mlm.mask", 6), 3));
  EXPECT_NE(ids(Philox(1, "train.mlm.mask", 5), 3), ids(Philox(2, "train.mlm.mask", 5), 3));
}

TEST(MlmErrors, ShortSequencesAndRowsThatDoNotFit) {
  const MlmDocuments docs = tokenize_mlm_documents(varied_documents(), kBytes);
  MlmOptions o;
  o.seq = 7;
  EXPECT_EQ(error_of([&] { make_mlm_instances(docs, o, 1); }),
            "make_mlm_instances: sequences of 7 tokens: expected at least 8");
  o.seq = 64;
  const MlmInstance in = make_mlm_instances(docs, o, 1).front();
  o.seq = 8;
  std::vector<int32_t> a(8), b(8), c(8);
  EXPECT_EQ(error_of([&] {
              write_mlm_row(docs, in, bert_special_tokens(kBytes), o, Philox(0, "x"), 0, {a, b, c});
            }),
            fmt::format("write_mlm_row: an instance of {} tokens does not fit a row of 8",
                        in.a_end - in.a_begin + in.b_end - in.b_begin + 3));
}

}  // namespace
}  // namespace sparsetrain
