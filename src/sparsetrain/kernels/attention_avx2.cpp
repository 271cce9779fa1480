// AVX2 attention products: 8-lane vectors. Compiled with AVX2 + FMA flags only here.
#include "sparsetrain/kernels/attention_kernels.h"

#include "sparsetrain/kernels/simd/isa_avx2.h"

#include "sparsetrain/kernels/simd/attention.h"
