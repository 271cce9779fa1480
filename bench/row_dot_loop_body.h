// The body of row_dot_loop.h's row_dot_rows for one ISA: included by row_dot_loop_<isa>.cpp after
// that ISA's kernels/simd/isa_<isa>.h and kernels/simd/common.h, as kernels/spmm_<isa>.cpp does.
#pragma once

#include <benchmark/benchmark.h>

#include "row_dot_loop.h"

namespace sparsetrain::bench::SPARSETRAIN_ISA_NS {

static_assert(SPARSETRAIN_SIMD_NS::kStageRows == kRowDotStageRows, "the stage the kernel cycles through");

void row_dot_rows(const PackedTokens& x, const BlockSparseView& w, float* stage) {
  for (int64_t r = 0; r < w.rows; ++r) {
    const int32_t begin = w.row_ptr[r];
    SPARSETRAIN_SIMD_NS::row_dot(
        x.tile(0), w.values + begin, w.row_ptr[r + 1] - begin, [col = w.col + begin](int64_t k) { return col[k]; },
        stage + (r % kRowDotStageRows) * kTokenTile);
    benchmark::ClobberMemory();
  }
}

}  // namespace sparsetrain::bench::SPARSETRAIN_ISA_NS
