// The WordPiece vocabulary loader on small hand-made files: both formats, both spellings, and
// every error it reports.
#include <gtest/gtest.h>

#include <filesystem>

#include "error_of.h"
#include "scoped_env.h"
#include "sparsetrain/text/wordpiece_tokenizer.h"
#include "temp_dir.h"

namespace sparsetrain {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using Format = WordPieceTokenizer::Format;

const std::string kSpecials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";

std::string lines_error(std::string_view text) {
  return testing::error_of([&] { WordPieceTokenizer::from_text(text, Format::Lines, "vocab.txt"); });
}

std::string json_error(std::string_view text) {
  return testing::error_of([&] { WordPieceTokenizer::from_text(text, Format::JsonList, "vocab.json"); });
}

TEST(WordPieceLoader, ChoosesTheFormatByExtension) {
  const TempDir dir;
  const auto txt = WordPieceTokenizer::load(dir.write("vocab.txt", kSpecials + "the\n##s\n"));
  EXPECT_EQ(txt.vocab_size(), 7);
  EXPECT_EQ(txt.encode("THE thes"), (std::vector<int32_t>{5, 5, 6}));
  const auto json =
      WordPieceTokenizer::load(dir.write("vocab.json", R"(["[PAD]","[UNK]","[CLS]","[SEP]","[MASK]","the","##s"])"));
  EXPECT_EQ(json.encode("THE thes"), (std::vector<int32_t>{5, 5, 6}));
  // Anything but .json is read as lines, even a name that looks like JSON inside.
  EXPECT_EQ(testing::error_of([&] { WordPieceTokenizer::load(dir.write("vocab", R"(["[PAD]"])")); }),
            (dir.path() / "vocab").string() +
                ": no [PAD] entry; a BERT vocabulary needs [PAD], [UNK], [CLS], "
                "[SEP] and [MASK]");
  EXPECT_EQ(testing::error_of([&] { WordPieceTokenizer::load(dir.path() / "missing.txt"); }),
            (dir.path() / "missing.txt").string() + ": cannot open: No such file or directory");
}

TEST(WordPieceLoader, AcceptsCrlfAndAMissingFinalNewline) {
  const auto t = WordPieceTokenizer::from_text("[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nab", Format::Lines, "v");
  EXPECT_EQ(t.vocab_size(), 6);
  EXPECT_EQ(t.token(4), "[MASK]");
  EXPECT_EQ(t.token_id("ab"), 5);
}

TEST(WordPieceLoader, ReportsBadFiles) {
  EXPECT_EQ(lines_error(""), "vocab.txt: empty file");
  EXPECT_EQ(json_error(""), "vocab.json: empty file");
  EXPECT_EQ(json_error("[\"[PAD]\", x]"),
            "vocab.json: malformed JSON at byte offset 10: syntax error while parsing value - invalid literal; last "
            "read: '\"[PAD]\", x'");
  EXPECT_EQ(json_error("[1e400]"), "vocab.json: malformed JSON: number overflow parsing '1e400'");
  EXPECT_EQ(json_error(R"({"[PAD]": 0})"), "vocab.json: expected a JSON list of token strings, got a JSON object");
  EXPECT_EQ(json_error("[]"), "vocab.json: no entries");
  EXPECT_EQ(json_error(R"(["[PAD]", "[UNK]", 7])"), "vocab.json: entry 2 is 7, expected a string");
  EXPECT_EQ(json_error(R"(["[PAD]", ["x"]])"), "vocab.json: entry 1 is [\"x\"], expected a string");
  EXPECT_EQ(json_error(R"(["[PAD]", ""])"), "vocab.json: entry 1 is empty");
  EXPECT_EQ(lines_error(kSpecials + "a\n\nb\n"), "vocab.txt: line 7 is empty");
  EXPECT_EQ(lines_error(kSpecials + "a\n\n"), "vocab.txt: line 7 is empty");
  EXPECT_EQ(lines_error("\n"), "vocab.txt: line 1 is empty");
  EXPECT_EQ(lines_error(kSpecials + "the\n##s\nthe\n"), "vocab.txt: line 8 repeats the token \"the\" of line 6");
  EXPECT_EQ(json_error(R"(["[PAD]", "[UNK]", "[PAD]"])"), "vocab.json: entry 2 repeats the token \"[PAD]\" of entry 0");
  EXPECT_EQ(lines_error("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n"),
            "vocab.txt: no [MASK] entry; a BERT vocabulary needs [PAD], [UNK], [CLS], [SEP] and [MASK]");
  EXPECT_EQ(lines_error("[pad]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"),
            "vocab.txt: no [PAD] entry; a BERT vocabulary needs [PAD], [UNK], [CLS], [SEP] and [MASK]");
  // Byte offsets count from the start of the file.
  EXPECT_EQ(lines_error(kSpecials + "ok\nb\xC3("),
            "vocab.txt: line 7: invalid UTF-8 at byte offset 36: expected a "
            "continuation byte, found 0x28");
  EXPECT_EQ(lines_error("\xFF\n"),
            "vocab.txt: line 1: invalid UTF-8 at byte offset 0: byte 0xff never occurs in UTF-8");
}

TEST(WordPieceLoader, ReportsCollisionsOfTheWordStartSpelling) {
  // "\u2581[X]" and "[X]" both stand for the token [X]; "\u2581a" and "\u2581a" for a.
  const std::string specials = R"("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")";
  EXPECT_EQ(json_error("[" + specials + R"(, "\u2581[X]", "[X]"])"),
            "vocab.json: entry 6 repeats the token \"[X]\" of entry 5");
  EXPECT_EQ(json_error("[" + specials + R"(, "\u2581a", "a", "\u2581a"])"),
            "vocab.json: entry 7 repeats the token \"a\" of entry 5");
  // With any "##" entry the file is in BERT's spelling, and U+2581 is an ordinary character.
  const auto t = WordPieceTokenizer::from_text("[" + specials + R"(, "\u2581a", "##b"])", Format::JsonList, "v.json");
  EXPECT_EQ(t.spelling(), WordPieceTokenizer::Spelling::ContinuationHashes);
  EXPECT_EQ(t.token_id("\u2581a"), 5);
  EXPECT_EQ(t.encode("\u2581ab"), (std::vector<int32_t>{5, 6}));
}

TEST(WordPieceLoader, DefaultFileNamesTheSetupScript) {
  const TempDir dir;
  fs::create_directories(dir.path() / "bert-tokenizer");
  const testing::ScopedEnv env("SPARSETRAIN_DATA_DIR", dir.path().string());
  EXPECT_EQ(testing::error_of([] { WordPieceTokenizer::load_default(); }),
            (dir.path() / "bert-tokenizer" / "assets" / "vocab.json").string() +
                ": no such file (run scripts/setup.sh to install the BERT vocabulary)");
}

}  // namespace
}  // namespace sparsetrain
