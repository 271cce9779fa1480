// The multiply-add peak loop on 8-lane AVX2 FMA. Compiled with AVX2 + FMA flags only here.
#include "sparsetrain/kernels/peak_rate.h"

#include "sparsetrain/kernels/simd/isa_avx2.h"

#include "sparsetrain/kernels/simd/peak.h"
