#pragma once
// Shared by the format tests: the formats and odd shapes every test walks, dense fills with
// bit patterns a lossy copy would change, and a check that an Error's message names the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/format_spec.h"

namespace sparsetrain::testing {

struct FormatShape {
  const char* format;
  int64_t rows, cols;
};

// Not multiples of a vector width or a block; N:M columns are multiples of M but not of 16.
inline const std::vector<FormatShape> kFormatShapes = {{"csr", 37, 53}, {"bcsr4", 37, 53}, {"bcsr8", 37, 53},
                                                       {"bcsr16", 37, 53}, {"2:4", 37, 52}, {"1:4", 21, 44},
                                                       {"2:8", 19, 56}};

inline std::string describe(const FormatShape& s) {
  return std::string(s.format) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

// Nonzero values of either sign, with a negative zero and a subnormal planted at fixed strides:
// a round trip through arithmetic instead of a copy would change their bits.
inline Matrix random_dense(int64_t rows, int64_t cols, uint64_t seed) {
  Matrix m(rows, cols);
  const Philox rng(seed, "dense");
  for (int64_t i = 0; i < m.size(); ++i) {
    const float u = rng.uniform(i);
    m.data()[i] = u < 0.5f ? -0.5f - u : u + 0.25f;
    if (i % 11 == 5) m.data()[i] = -0.0f;
    if (i % 13 == 7) m.data()[i] = 1e-40f;
  }
  return m;
}

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Runs f, which must throw Error with every fragment in its message.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << fragments.front() << "'";
  } catch (const Error& e) {
    for (const auto& fragment : fragments)
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "'" << fragment << "' not in: " << e.what();
  }
}

}  // namespace sparsetrain::testing
