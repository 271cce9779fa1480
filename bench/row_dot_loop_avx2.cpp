// row_dot_loop.h's loop with the AVX2 kernels' vectors. Compiled with the AVX2 flags only here.
// The vector type first, then the kernel bodies written against it, as in kernels/spmm_avx2.cpp.
// clang-format off
#include "sparsetrain/kernels/simd/isa_avx2.h"
#include "sparsetrain/kernels/simd/common.h"
// clang-format on

#include "row_dot_loop_body.h"
