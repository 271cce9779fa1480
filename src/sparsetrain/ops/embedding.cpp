#include "sparsetrain/ops/embedding.h"

#include <algorithm>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"

namespace sparsetrain {

namespace {

constexpr int64_t kMinRowsPerThread = 64;
constexpr int64_t kMinColsPerThread = 64;

int parts_for(int64_t items, int64_t min_per_part) {
  return static_cast<int>(std::clamp<int64_t>(items / min_per_part, 1, 1 << 16));
}

// Checked before anything is written, so a bad id leaves the output untouched.
void check_ids(const char* op, std::span<const int32_t> ids, int64_t vocab) {
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < 0 || ids[t] >= vocab)
      fail("{}: id {} at position {} is outside the table's rows [0, {})", op, ids[t], t, vocab);
}

}  // namespace

// table [V x C], ids [T], out [T x C].
void embedding_forward(ConstMatrixView table, std::span<const int32_t> ids, MatrixView out, bool accumulate) {
  const ProfileScope profile("embedding");
  const int64_t T = static_cast<int64_t>(ids.size()), C = table.cols;
  if (out.rows != T || out.cols != C)
    fail("embedding_forward: out is [{} x {}]; expected [{} x {}] (one row per id, the table's width)", out.rows,
         out.cols, T, C);
  check_ids("embedding_forward", ids, table.rows);
  parallel_run(parts_for(T, kMinRowsPerThread), [&](int ith, int nth) {
    int64_t t0 = 0, t1 = 0;
    balance_even(T, ith, nth, t0, t1);
    for (int64_t t = t0; t < t1; ++t) {
      const float* src = table.row(ids[t]);
      float* dst = out.row(t);
      if (accumulate) {
        for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
      } else {
        std::copy(src, src + C, dst);
      }
    }
  });
}

// dout [T x C], ids [T], dtable [V x C]. Repeated ids make rows collide, so the split is over
// columns: each thread walks every token in order for its own columns, and every element of
// dtable receives its terms in token order whatever the thread count.
void embedding_backward(ConstMatrixView dout, std::span<const int32_t> ids, MatrixView dtable) {
  const ProfileScope profile("embedding");
  const int64_t T = static_cast<int64_t>(ids.size()), C = dtable.cols;
  if (dout.rows != T || dout.cols != C)
    fail("embedding_backward: dout is [{} x {}]; expected [{} x {}] (one row per id, the table's width)", dout.rows,
         dout.cols, T, C);
  check_ids("embedding_backward", ids, dtable.rows);
  parallel_run(parts_for(C, kMinColsPerThread), [&](int ith, int nth) {
    int64_t c0 = 0, c1 = 0;
    balance_even(C, ith, nth, c0, c1);
    for (int64_t t = 0; t < T; ++t) {
      const float* src = dout.row(t);
      float* dst = dtable.row(ids[t]);
      for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
    }
  });
}

}  // namespace sparsetrain
