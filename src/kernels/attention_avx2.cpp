// AVX2 attention products: 8-lane vectors. Compiled with AVX2 + FMA flags only here.
#include "kernels/attention_kernels.h"

#include "kernels/simd/isa_avx2.h"

#include "kernels/simd/attention.h"
