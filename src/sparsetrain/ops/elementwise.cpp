#include "sparsetrain/ops/elementwise.h"

#include <algorithm>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"

namespace sparsetrain {

namespace {

// Element-wise work below this size is not worth waking a second thread for.
constexpr int64_t kMinPerThread = 1 << 15;

void check_same(const char* op, ConstMatrixView a, ConstMatrixView b) {
  if (a.rows != b.rows || a.cols != b.cols)
    fail("{}: [{} x {}] and [{} x {}] differ in shape", op, a.rows, a.cols, b.rows, b.cols);
}

}  // namespace

void add(ConstMatrixView a, ConstMatrixView b, MatrixView out) {
  const ProfileScope profile("residual add");
  check_same("add", a, b);
  check_same("add", a, out);
  parallel_ranges(out.rows, kMinPerThread / std::max<int64_t>(out.cols, 1) + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < out.cols; ++c) out.row(r)[c] = a.row(r)[c] + b.row(r)[c];
  });
}

void add_into(ConstMatrixView x, MatrixView y) { add(y, x, y); }

}  // namespace sparsetrain
