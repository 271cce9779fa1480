// AVX-512 attention products: 16-lane vectors. Compiled with AVX-512 flags only here.
#include "kernels/attention_kernels.h"

// GCC 12 reports the undefined passthrough operand inside its own AVX-512 intrinsics as
// uninitialized in the sanitizer build; see spmm_avx512.cpp.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/simd/isa_avx512.h"

#include "kernels/simd/attention.h"
