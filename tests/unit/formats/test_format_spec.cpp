// FormatSpec: the text forms of every format, and a message naming the source for anything else.
#include <gtest/gtest.h>

#include "format_test_util.h"

namespace sparsetrain {
namespace {

using namespace sparsetrain::testing;

TEST(FormatSpec, ParsesEveryFormAndNamesRoundTrip) {
  EXPECT_EQ(FormatSpec::parse("csr", "t"), FormatSpec::csr());
  EXPECT_EQ(FormatSpec::parse("bcsr4", "t"), FormatSpec::bcsr(4));
  EXPECT_EQ(FormatSpec::parse("bcsr8", "t"), FormatSpec::bcsr(8));
  EXPECT_EQ(FormatSpec::parse("bcsr16", "t"), FormatSpec::bcsr(16));
  EXPECT_EQ(FormatSpec::parse("2:4", "t"), FormatSpec::nm(2, 4));
  EXPECT_EQ(FormatSpec::parse("1:4", "t"), FormatSpec::nm(1, 4));
  EXPECT_EQ(FormatSpec::parse("2:8", "t"), FormatSpec::nm(2, 8));
  EXPECT_EQ(FormatSpec::parse("31:32", "t"), FormatSpec::nm(31, 32));
  for (const char* text : {"csr", "bcsr4", "bcsr8", "bcsr16", "2:4", "1:4", "2:8", "3:16"})
    EXPECT_EQ(FormatSpec::parse(text, "t").name(), text);
}

TEST(FormatSpec, ImpliedSparsityIsOneMinusNOverMForNmOnly) {
  EXPECT_DOUBLE_EQ(FormatSpec::nm(2, 4).implied_sparsity(), 0.5);
  EXPECT_DOUBLE_EQ(FormatSpec::nm(1, 4).implied_sparsity(), 0.75);
  EXPECT_LT(FormatSpec::csr().implied_sparsity(), 0.0);
  EXPECT_LT(FormatSpec::bcsr(16).implied_sparsity(), 0.0);
}

TEST(FormatSpec, UnknownTextIsAnErrorNamingSourceAndText) {
  for (const char* text : {"bcsr3", "CSR", "coo", "", "2:", ":4", "2:4x", "bcsr"})
    expect_error([&] { FormatSpec::parse(text, "--format"); },
                 {"--format", std::string("unknown sparse format '") + text + "'", "csr, bcsr4, bcsr8, bcsr16 or N:M"});
}

TEST(FormatSpec, OutOfRangeNmIsAnErrorNamingTheLimits) {
  for (const char* text : {"4:4", "0:4", "5:4", "1:1", "2:64", "-1:4"})
    expect_error([&] { FormatSpec::parse(text, "sparsity.format"); }, {"sparsity.format", text, "1 <= N < M <= 32"});
}

}  // namespace
}  // namespace sparsetrain
