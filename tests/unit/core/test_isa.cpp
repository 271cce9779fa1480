// ISA names and the run-time cap that lets one machine run every lower implementation.
#include <gtest/gtest.h>

#include <string>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"

namespace sparsetrain {
namespace {

TEST(Isa, ParseAcceptsTheFourNames) {
  for (CpuIsa isa : {CpuIsa::Ref, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16})
    EXPECT_EQ(parse_isa(isa_name(isa), "t"), isa);
  EXPECT_EQ(parse_isa("avx512_bf16", "t"), CpuIsa::Avx512Bf16);
  EXPECT_EQ(parse_isa("avx512", "t"), CpuIsa::Avx512);
  EXPECT_EQ(parse_isa("avx2", "t"), CpuIsa::Avx2);
  EXPECT_EQ(parse_isa("ref", "t"), CpuIsa::Ref);
}

TEST(Isa, ParseRejectsOtherTextNamingTheSourceAndValue) {
  for (const char* bad : {"sse9", "AVX2", "avx", ""}) {
    try {
      parse_isa(bad, "environment variable SPARSETRAIN_MAX_ISA");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("environment variable SPARSETRAIN_MAX_ISA"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("avx512_bf16, avx512, avx2, ref"), std::string::npos) << what;
    }
  }
}

class IsaCap : public ::testing::Test {
 protected:
  void TearDown() override { set_max_isa(saved_); }
  CpuIsa saved_ = max_isa();
};

TEST_F(IsaCap, CapsTheEffectiveIsa) {
  for (CpuIsa cap : {CpuIsa::Ref, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16}) {
    set_max_isa(cap);
    EXPECT_EQ(max_isa(), cap);
    EXPECT_EQ(effective_isa(), std::min(cap, cpu_isa())) << "cap " << isa_name(cap);
    EXPECT_TRUE(isa_usable(CpuIsa::Ref));
    for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16})
      EXPECT_EQ(isa_usable(isa), cap >= isa && cpu_isa() >= isa) << "cap " << isa_name(cap) << ", " << isa_name(isa);
  }
}

TEST_F(IsaCap, RefCapLeavesOnlyTheReference) {
  set_max_isa(CpuIsa::Ref);
  EXPECT_EQ(effective_isa(), CpuIsa::Ref);
  EXPECT_FALSE(isa_usable(CpuIsa::Avx2));
  EXPECT_FALSE(isa_usable(CpuIsa::Avx512));
}

}  // namespace
}  // namespace sparsetrain
