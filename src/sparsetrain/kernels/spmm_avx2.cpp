// AVX2 kernels: 8-lane vectors, 8 per 64-token tile. Compiled with AVX2 + FMA flags only here.
#include "sparsetrain/kernels/spmm.h"

#include "sparsetrain/kernels/simd/isa_avx2.h"

#include "sparsetrain/kernels/spmm_simd.h"
