#pragma once
// Random masks with an exact kept count, shaped for a format: element-wise for CSR, whole
// blocks for bcsr4/8/16, exactly N per group for N:M. Deterministic in (rng key, shape).
#include "sparsetrain/core/philox.h"
#include "sparsetrain/formats/format_spec.h"
#include "sparsetrain/formats/mask.h"

namespace sparsetrain {

// Keeps round((1 - sparsity) * units) units (elements or blocks). N:M formats ignore `sparsity`.
Mask random_mask(const FormatSpec& format, int64_t rows, int64_t cols, double sparsity, const Philox& rng);

}  // namespace sparsetrain
