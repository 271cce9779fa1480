#pragma once
// Score-based mask selection shared by every sparsity algorithm: top-k for initial and pruned
// masks (Static, GMP) and the drop and grow halves of a dynamic update (SET, RigL), with the
// semantics of the Cerebras sparsity API (cerebras.pytorch.sparse utils).
//
// Decisions are made per unit of the format: one element for csr and N:M, one whole b x b block
// for bcsrB, edge blocks clipped at the border included. A block scores the sum of its in-range
// scores (accumulated in double, ranked as float). Units rank highest score first; NaN ranks below
// every number, -inf included; equal scores go to the lower unit index (row-major over units). The
// result is therefore the same on every machine and thread count.
//
// Masks passed in must match the score's shape and, for bcsrB, be block-uniform. Every error
// names the function, the shapes and what was expected.
#include <cstdint>

#include "sparsetrain/core/tensor.h"
#include "sparsetrain/formats/format_spec.h"
#include "sparsetrain/formats/mask.h"

namespace sparsetrain {

// Units of a rows x cols mask: elements, or blocks including the clipped edge blocks.
int64_t mask_units(const FormatSpec& format, int64_t rows, int64_t cols);

// Units `mask` keeps: elements, or whole blocks (it must be block-uniform).
int64_t units_kept_by(const Mask& mask, const FormatSpec& format);

// Units a mask at `sparsity` keeps: (1 - sparsity) * units truncated, as Cerebras does. Throws
// for a sparsity outside [0, 1].
int64_t kept_units(double sparsity, int64_t units);

// Keeps the `keep_units` highest-scoring units. N:M keeps the N highest in every group of M
// along a row and ignores `keep_units`.
Mask topk_mask(ConstMatrixView score, const FormatSpec& format, int64_t keep_units);

// Keeps the `keep_units` highest-scoring units among those `mask` keeps (all of them when it
// keeps fewer); absent units stay absent. N:M selects over the whole matrix too, so groups may
// end up with fewer than N: the grow that follows refills them.
Mask drop_minimum(ConstMatrixView score, const Mask& mask, const FormatSpec& format, int64_t keep_units);

// Adds the max(0, target_units - kept) highest-scoring units `mask` does not keep; kept units
// stay. N:M instead refills every group to exactly N with its highest-scoring absent positions
// (a group already holding N or more gets nothing) and ignores `target_units`.
Mask grow_maximum(ConstMatrixView score, const Mask& mask, const FormatSpec& format, int64_t target_units);

}  // namespace sparsetrain
