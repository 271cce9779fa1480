// The multiply-add peak loop on 16-lane AVX-512 FMA. Compiled with AVX-512 flags only here.
#include "sparsetrain/kernels/peak_rate.h"

// GCC 12 reports the undefined passthrough operand inside its own AVX-512 intrinsics as
// uninitialized in the sanitizer build; see spmm_avx512.cpp.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "sparsetrain/kernels/simd/isa_avx512.h"

#include "sparsetrain/kernels/simd/peak.h"
