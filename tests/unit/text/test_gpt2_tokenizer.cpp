// Encodings checked against the reference implementation: the expected ids below were produced
// by the gpt-3-encoder npm package (Encoder.js, a port of OpenAI's encoder.py) with node, e.g.
//   node -e 'console.log(require("./data/npm/node_modules/gpt-3-encoder").encode("Hello world"))'
// The last three are whitespace edge cases where the ids come from OpenAI's encoder.py (Python's
// `regex` module), the original: Encoder.js gives {64, 126, 227, 6, 297, 275} for the first, as
// JavaScript's \s does not take U+0085 (NEXT LINE) while Python's does; U+180E is not whitespace
// for either (PCRE2's \s would take it); U+FEFF is whitespace for JavaScript only.
#include <gtest/gtest.h>

#include <thread>

#include "error_of.h"
#include "sparsetrain/text/gpt2_tokenizer.h"

namespace sparsetrain {
namespace {

const Gpt2Tokenizer& gpt2() {
  static const Gpt2Tokenizer t = Gpt2Tokenizer::load_default();
  return t;
}

struct Case {
  const char* text;
  std::vector<int32_t> ids;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"Hello world", {15496, 995}},
      {"hello world", {31373, 995}},
      {" Hello", {18435}},
      {"<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},
      {"I'm sure they'll say it's fine; we've done what you'd do.",
       {40, 1101, 1654, 484, 1183, 910, 340, 338, 3734, 26, 356, 1053, 1760, 644, 345, 1549, 466, 13}},
      {"DON'T 'S 'll", {41173, 6, 51, 705, 50, 705, 297}},
      {"In 2023 we sold 1,234,567.89 units (12%)",
       {818, 1160, 1954, 356, 2702, 352, 11, 24409, 11, 20, 3134, 13, 4531, 4991, 357, 1065, 4407}},
      {"a  b   c    d", {64, 220, 275, 220, 220, 269, 220, 220, 220, 288}},
      {"line one\nline two\n\n\tindented\r\n", {1370, 530, 198, 1370, 734, 628, 197, 521, 4714, 201, 198}},
      {"trailing spaces   ", {9535, 4386, 9029, 220, 220, 220}},
      {"emoji 😀👍🏽 and ❤️", {368, 31370, 30325, 222, 41840, 235, 8582, 237, 121, 290, 43074, 97, 37929}},
      {"Привет, мир! Καλημέρα κόσμε",
       {140,   253, 21169, 18849, 38857, 16843, 20375, 11,    12466, 120, 18849, 21169, 0,     7377,  248,  17394,
        39377, 138, 115,   34703, 138,   255,   33643, 17394, 7377,  118, 139,   234,   38392, 34703, 30950}},
      {"日本語のテキスト、中文文本。",
       {33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 23513, 40792, 23877, 229, 23877, 229, 17312, 105,
        16764}},
      {"مرحبا بالعالم", {25405, 26897, 148, 255, 39848, 12919, 17550, 101, 23525, 44690, 23525, 25405}},
      {"x = f(y) + 3**2 // 7; print(\"ok\")",
       {87, 796, 277, 7, 88, 8, 1343, 513, 1174, 17, 3373, 767, 26, 3601, 7203, 482, 4943}},
      {"   leading", {220, 220, 3756}},
      {"naïve café résumé", {2616, 38776, 40304, 40560, 16345, 2634}},
      {"\u00a0nbsp\u2003em space", {1849, 77, 24145, 447, 225, 368, 2272}},
      {"a\u0085'll b", {64, 126, 227, 1183, 275}},
      {"x\u180e're y", {87, 157, 254, 236, 6, 260, 331}},
      {"\ufeffBOM  \ufeff", {171, 119, 123, 33, 2662, 220, 27332, 119, 123}},
  };
  return c;
}

TEST(Gpt2Tokenizer, LoadsTheGpt2Files) {
  const Gpt2Tokenizer& t = gpt2();
  EXPECT_EQ(t.name(), "gpt2");
  EXPECT_EQ(t.vocab_size(), 50257);
  EXPECT_EQ(t.end_of_text(), 50256);
  EXPECT_EQ(t.merge_count(), 50000u);
  EXPECT_EQ(t.token(15496), "Hello");
  EXPECT_EQ(t.token(995), "\u0120world");  // "Ġworld": the space byte is the symbol U+0120
  EXPECT_EQ(t.id_of("<|endoftext|>"), 50256);
  EXPECT_FALSE(t.id_of("no such token").has_value());
}

TEST(Gpt2Tokenizer, EncodesAsTheReferenceImplementation) {
  for (const Case& c : cases()) EXPECT_EQ(gpt2().encode(c.text), c.ids) << c.text;
}

TEST(Gpt2Tokenizer, EndOfTextInTheTextIsNotSpecial) {
  const std::vector<int32_t> ids = gpt2().encode("a<|endoftext|>b");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 50256), 0);
  EXPECT_EQ(gpt2().decode(ids), "a<|endoftext|>b");
  const std::vector<int32_t> eot = {50256};
  EXPECT_EQ(gpt2().decode(eot), "<|endoftext|>");
}

TEST(Gpt2Tokenizer, RoundTrips) {
  for (const Case& c : cases()) EXPECT_EQ(gpt2().decode(gpt2().encode(c.text)), c.text);
  EXPECT_TRUE(gpt2().encode("").empty());
  EXPECT_EQ(gpt2().decode(std::vector<int32_t>{}), "");
  const std::string all_bytes_utf8 = "\x01\x7f\u00ff\u0100\U0010FFFF \t\v\f";
  EXPECT_EQ(gpt2().decode(gpt2().encode(all_bytes_utf8)), all_bytes_utf8);
}

TEST(Gpt2Tokenizer, DecodeKeepsPartialCharactersAsBytes) {
  const std::vector<int32_t> half_of_p = {140};  // first byte of "П" (D0 9F)
  EXPECT_EQ(gpt2().decode(half_of_p), "\xD0");
}

TEST(Gpt2Tokenizer, EncodeIsThreadSafe) {
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < got.size(); ++k)
    threads.emplace_back([&, k] {
      for (int r = 0; r < 20; ++r)
        for (const Case& c : cases()) {
          const auto ids = gpt2().encode(c.text);
          got[k].insert(got[k].end(), ids.begin(), ids.end());
        }
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
}

TEST(Gpt2Tokenizer, RejectsBadInput) {
  EXPECT_EQ(testing::error_of([] { gpt2().encode("ok \xC3("); }), "gpt2 tokenizer: input is not valid UTF-8 at byte 3");
  EXPECT_EQ(testing::error_of([] { gpt2().encode("\xED\xA0\x80"); }),  // a UTF-16 surrogate
            "gpt2 tokenizer: input is not valid UTF-8 at byte 0");
  const std::vector<int32_t> ids = {15496, 50257};
  EXPECT_EQ(testing::error_of([&] { gpt2().decode(ids); }),
            "gpt2 tokenizer: id 50257 at position 1 is outside [0, 50257)");
}

}  // namespace
}  // namespace sparsetrain
