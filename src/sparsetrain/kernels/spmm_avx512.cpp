// AVX-512 kernels: 16-lane vectors, 4 per 64-token tile. Compiled with AVX-512 flags only here.
#include "sparsetrain/kernels/spmm.h"

// GCC 12 reports the deliberately undefined passthrough operand inside its own AVX-512
// intrinsics (`__m512 __Y = __Y;`) as uninitialized when a build inlines them into these
// kernels (the sanitizer build does; GCC bug 105593); no value of ours is involved. The same
// kernel bodies compiled for AVX2 (spmm_avx2.cpp) keep the warning.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "sparsetrain/kernels/simd/isa_avx512.h"

#include "sparsetrain/kernels/spmm_simd.h"
