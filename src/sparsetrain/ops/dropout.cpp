#include "sparsetrain/ops/dropout.h"

#include <algorithm>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"

namespace sparsetrain {

namespace {

constexpr int64_t kMinElementsPerThread = 1 << 15;

int parts_for(int64_t elements) {
  return static_cast<int>(std::clamp<int64_t>(elements / kMinElementsPerThread, 1, 1 << 16));
}

void check_p(const char* op, float p) {
  // Written so that a NaN p fails too.
  if (!(p >= 0.0f && p < 1.0f)) fail("{}: drop probability {} is outside [0, 1)", op, p);
}

void check_same_shape(const char* op, const char* a_name, ConstMatrixView a, const char* b_name, ConstMatrixView b) {
  if (a.rows != b.rows || a.cols != b.cols)
    fail("{}: {} is [{} x {}] but {} is [{} x {}]; they must have the same shape", op, a_name, a.rows, a.cols, b_name,
         b.rows, b.cols);
}

}  // namespace

// x, y [R x C]; keep [R * C], row-major without padding whatever x's ld.
void dropout_forward(float p, const Philox& rng, ConstMatrixView x, MatrixView y, uint8_t* keep, bool inverted,
                     int64_t first_row) {
  const ProfileScope profile("dropout");
  check_p("dropout_forward", p);
  check_same_shape("dropout_forward", "x", x, "y", y);
  const int64_t R = x.rows, C = x.cols;
  const float scale = inverted ? 1.0f / (1.0f - p) : 1.0f;
  parallel_run(parts_for(R * C), [&](int ith, int nth) {
    int64_t r0 = 0, r1 = 0;
    balance_even(R, ith, nth, r0, r1);
    // One Philox block holds four consecutive elements' words; reuse it instead of recomputing
    // it per element as rng.uniform(i) would. The value is the same: (bits >> 8) * 2^-24.
    uint64_t block_index = ~uint64_t{0};
    Philox::Block block{};
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x.row(r);
      float* yr = y.row(r);
      uint8_t* kr = keep + r * C;
      for (int64_t c = 0; c < C; ++c) {
        const uint64_t i = static_cast<uint64_t>((first_row + r) * C + c);
        if (i / 4 != block_index) {
          block_index = i / 4;
          block = rng.block(block_index);
        }
        const float u = static_cast<float>(block[i % 4] >> 8) * 0x1.0p-24f;
        const bool k = u >= p;
        kr[c] = k ? 1 : 0;
        // x * 0 rather than a plain 0, so a NaN input stays NaN as in torch's x * mask * scale.
        yr[c] = xr[c] * (k ? scale : 0.0f);
      }
    }
  });
}

// dy, dx [R x C]; keep [R * C] from the forward pass.
void dropout_backward(float p, const uint8_t* keep, ConstMatrixView dy, MatrixView dx, bool inverted) {
  const ProfileScope profile("dropout");
  check_p("dropout_backward", p);
  check_same_shape("dropout_backward", "dy", dy, "dx", dx);
  const int64_t R = dy.rows, C = dy.cols;
  const float scale = inverted ? 1.0f / (1.0f - p) : 1.0f;
  parallel_run(parts_for(R * C), [&](int ith, int nth) {
    int64_t r0 = 0, r1 = 0;
    balance_even(R, ith, nth, r0, r1);
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = dy.row(r);
      float* out = dx.row(r);
      const uint8_t* kr = keep + r * C;
      for (int64_t c = 0; c < C; ++c) out[c] = g[c] * (kr[c] != 0 ? scale : 0.0f);
    }
  });
}

}  // namespace sparsetrain
