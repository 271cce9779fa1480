// JSON values as error messages quote them: bounded in depth and length, never recursing deep.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "sparsetrain/core/json_text.h"

namespace sparsetrain {
namespace {

using nlohmann::json;

TEST(JsonText, ShallowValuesReadAsDumpWritesThem) {
  EXPECT_EQ(json_text(json::parse(R"([1,2.5,"x",null,{"k":[true]}])")), R"([1,2.5,"x",null,{"k":[true]}])");
  EXPECT_EQ(json_text(json(-3)), "-3");
  EXPECT_EQ(json_text(json("\xc3\xa9")), "\"\xc3\xa9\"");
}

TEST(JsonText, DeepValuesAreNamedAndLongOnesCut) {
  const std::string levels_16 = std::string(16, '[') + std::string(16, ']');
  EXPECT_EQ(json_text(json::parse(levels_16)), levels_16);
  EXPECT_EQ(json_text(json::parse("[" + levels_16 + "]")), "a JSON array nested more than 16 deep");
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(json_text(json::parse("{\"a\":" + deep + "}")), "a JSON object nested more than 16 deep");

  const std::string long_text = json_text(json(std::string(500, 'a')));
  EXPECT_EQ(long_text, std::string(1, '"').append(196, 'a').append("..."));
  // Cut before a character, never inside one: "é" is two bytes.
  std::string accents;
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";
  const std::string cut = json_text(json(accents));
  EXPECT_EQ(cut, std::string(1, '"').append(accents, 0, 196).append("..."));
}

}  // namespace
}  // namespace sparsetrain
