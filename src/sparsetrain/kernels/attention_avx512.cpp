// AVX-512 attention products: 16-lane vectors. Compiled with AVX-512 flags only here.
#include "sparsetrain/kernels/attention_kernels.h"

// GCC 12 reports the undefined passthrough operand inside its own AVX-512 intrinsics as
// uninitialized in the sanitizer build; see spmm_avx512.cpp.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "sparsetrain/kernels/simd/isa_avx512.h"

#include "sparsetrain/kernels/simd/attention.h"
