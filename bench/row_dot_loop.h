#pragma once
// The CSR forward's inner loop (`row_dot`) for bench_row_dot.cpp, compiled once per vector ISA
// (row_dot_loop_<isa>.cpp with that ISA's flags, the body in row_dot_loop_body.h), so that the
// benchmark times the loop of every ISA the machine runs.
#include "sparsetrain/formats/block_sparse.h"
#include "sparsetrain/kernels/packed_tokens.h"

namespace sparsetrain::bench {

// Every row of w over tile 0 of x, each row's 64 outputs written to stage row r % 16 as the
// kernel stages them (stage: 16 x kTokenTile floats, 64-byte aligned).
using RowDotLoop = void (*)(const PackedTokens& x, const BlockSparseView& w, float* stage);
inline constexpr int kRowDotStageRows = 16;

#ifdef SPARSETRAIN_HAVE_AVX512
namespace avx512 {
void row_dot_rows(const PackedTokens& x, const BlockSparseView& w, float* stage);
}
#endif
#ifdef SPARSETRAIN_HAVE_AVX2
namespace avx2 {
void row_dot_rows(const PackedTokens& x, const BlockSparseView& w, float* stage);
}
#endif

}  // namespace sparsetrain::bench
