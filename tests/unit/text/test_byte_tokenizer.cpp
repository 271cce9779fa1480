#include <gtest/gtest.h>

#include <random>

#include "error_of.h"
#include "sparsetrain/text/byte_tokenizer.h"

namespace sparsetrain {
namespace {

TEST(ByteTokenizer, IdsAreBytes) {
  const ByteTokenizer t;
  EXPECT_EQ(t.vocab_size(), 256);
  EXPECT_EQ(t.name(), "byte");
  EXPECT_FALSE(t.end_of_text().has_value());
  EXPECT_EQ(t.encode(std::string("A\0\xff", 3)), (std::vector<int32_t>{65, 0, 255}));
  EXPECT_TRUE(t.encode("").empty());
  const std::vector<int32_t> ids = {104, 105, 0, 255};
  EXPECT_EQ(t.decode(ids), std::string("hi\0\xff", 4));
}

TEST(ByteTokenizer, RoundTripsRandomBytes) {
  const ByteTokenizer t;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 300);
  for (int i = 0; i < 200; ++i) {
    std::string s(static_cast<std::size_t>(length(rng)), '\0');
    for (char& c : s) c = static_cast<char>(byte(rng));
    const std::vector<int32_t> ids = t.encode(s);
    ASSERT_EQ(ids.size(), s.size());
    ASSERT_EQ(t.decode(ids), s);
  }
}

TEST(ByteTokenizer, EndOfTextIsOptional) {
  const ByteTokenizer t(/*with_end_of_text=*/true);
  EXPECT_EQ(t.vocab_size(), 257);
  EXPECT_EQ(t.end_of_text(), 256);
  const std::vector<int32_t> ids = {97, 256, 98};
  EXPECT_EQ(t.decode(ids), "ab");  // end-of-text stands for no bytes
}

TEST(ByteTokenizer, RejectsIdsOutsideTheVocabulary) {
  const std::vector<int32_t> eot = {97, 256};
  EXPECT_EQ(testing::error_of([&] { ByteTokenizer().decode(eot); }),
            "byte tokenizer: id 256 at position 1 is outside [0, 256)");
  const std::vector<int32_t> negative = {-1};
  EXPECT_EQ(testing::error_of([&] { ByteTokenizer(true).decode(negative); }),
            "byte tokenizer: id -1 at position 0 is outside [0, 257)");
}

}  // namespace
}  // namespace sparsetrain
