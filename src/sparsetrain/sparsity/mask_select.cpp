#include "sparsetrain/sparsity/mask_select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

// The units of a rows x cols matrix: b x b blocks numbered row-major, b = 1 for csr and N:M.
struct UnitGrid {
  int64_t b, rows, cols, block_rows, block_cols;
  int64_t units() const { return block_rows * block_cols; }
};

UnitGrid unit_grid(const FormatSpec& format, int64_t rows, int64_t cols) {
  const int64_t b = format.kind == FormatKind::NM ? 1 : format.block;
  return {b, rows, cols, (rows + b - 1) / b, (cols + b - 1) / b};
}

// Calls f(unit, r, c) for every element, walking blocks row by row so no element pays a division.
// Single-element units get a plain loop the compiler can vectorize. `g` is a copy so its bounds stay
// in registers when f stores bytes, which may alias anything.
template <typename F>
void for_each_element(UnitGrid g, F f) {
  for (int64_t r = 0; r < g.rows; ++r) {
    const int64_t first = r / g.b * g.block_cols;
    if (g.b == 1) {
      for (int64_t c = 0; c < g.cols; ++c) f(first + c, r, c);
      continue;
    }
    for (int64_t bc = 0; bc < g.block_cols; ++bc)
      for (int64_t c = bc * g.b, end = std::min(g.cols, c + g.b); c < end; ++c) f(first + bc, r, c);
  }
}

// Unsigned keys that order scores as the ranking does: -0 equal to +0, NaN below -inf. Key 0 is
// left free to mark units that may not be chosen.
uint32_t rank_key(float score) {
  if (std::isnan(score)) return 1;
  const auto bits = std::bit_cast<uint32_t>(score == 0.0f ? 0.0f : score);
  return bits >> 31 ? ~bits : bits | 0x80000000u;
}

std::vector<uint32_t> unit_keys(const UnitGrid& g, ConstMatrixView score) {
  std::vector<uint32_t> keys(g.units());
  if (g.b == 1) {
    for_each_element(g, [&](int64_t u, int64_t r, int64_t c) { keys[u] = rank_key(score.at(r, c)); });
    return keys;
  }
  std::vector<double> sums(g.units(), 0.0);
  for_each_element(g, [&](int64_t u, int64_t r, int64_t c) { sums[u] += score.at(r, c); });
  std::transform(sums.begin(), sums.end(), keys.begin(), [](double s) { return rank_key(static_cast<float>(s)); });
  return keys;
}

// Per unit, 1 when `mask` keeps it. A block must be kept or pruned whole.
std::vector<uint8_t> present_units(const char* who, const UnitGrid& g, const Mask& mask, const FormatSpec& format) {
  const uint8_t* keep = mask.data();
  const int64_t cols = g.cols;
  std::vector<int32_t> kept(g.units(), 0);
  int32_t* k = kept.data();
  for_each_element(g, [=](int64_t u, int64_t r, int64_t c) { k[u] += keep[r * cols + c] != 0; });
  if (g.b > 1)
    for_each_element(g, [=](int64_t u, int64_t r, int64_t c) {
      if ((keep[r * cols + c] != 0) != (k[u] > 0))
        fail("{}: {} mask is not block-uniform: block ({}, {}) keeps {} of its weights but not ({}, {})", who,
             format.name(), r / g.b, c / g.b, k[u], r, c);
    });
  std::vector<uint8_t> present(kept.size());
  std::transform(kept.begin(), kept.end(), present.begin(), [](int32_t n) { return n > 0; });
  return present;
}

Mask to_mask(const UnitGrid& g, const std::vector<uint8_t>& chosen) {
  Mask mask(g.rows, g.cols);
  uint8_t* keep = mask.data();
  const uint8_t* units = chosen.data();
  const int64_t cols = g.cols;
  for_each_element(g, [=](int64_t u, int64_t r, int64_t c) { keep[r * cols + c] = units[u]; });
  return mask;
}

// Inputs at least this long first narrow the search to one histogram bucket.
constexpr std::size_t kHistogramMin = 1 << 16;

// Sets `out` to the keys that pass `keep`, in order; `keys` may view `out` itself. Branch-free, as
// which keys pass is unpredictable.
template <typename Keep>
void copy_keys_if(std::span<const uint32_t> keys, std::vector<uint32_t>& out, Keep keep) {
  out.resize(keys.size());
  std::size_t n = 0;
  for (uint32_t key : keys) {
    out[n] = key;
    n += keep(key);
  }
  out.resize(n);
}

// The k-th largest key, 1 <= k <= the number of nonzero keys. nth_element over millions of keys is
// too slow for a per-step mask update, so large inputs first find the bucket of the top 16 key bits
// holding the answer and order only that bucket. Zero keys can never be the answer and go first:
// they are most of the keys in a drop or grow, and would all pile onto one histogram counter.
uint32_t kth_largest(std::span<const uint32_t> keys, int64_t k) {
  std::vector<uint32_t> candidates;
  copy_keys_if(keys, candidates, [](uint32_t key) { return key != 0; });
  if (candidates.size() >= kHistogramMin) {
    std::vector<int64_t> count(1 << 16, 0);
    for (uint32_t key : candidates) ++count[key >> 16];
    uint32_t bucket = 0xffff;
    for (; k > count[bucket]; --bucket) k -= count[bucket];
    copy_keys_if(candidates, candidates, [=](uint32_t key) { return key >> 16 == bucket; });
  }
  std::nth_element(candidates.begin(), candidates.begin() + (k - 1), candidates.end(), std::greater<>());
  return candidates[k - 1];
}

// Sets chosen[i] for the `count` largest keys, equal keys going to the lower index. Key 0 is never
// chosen: `count` must not exceed the number of nonzero keys.
void choose_largest(std::span<const uint32_t> keys, int64_t count, uint8_t* chosen) {
  if (count == 0) return;
  const int64_t n = static_cast<int64_t>(keys.size());
  // Keys equal to the count-th largest are taken in index order, so the result does not depend on
  // how nth_element permutes them.
  const uint32_t threshold = kth_largest(keys, count);
  int64_t ties = count - std::count_if(keys.begin(), keys.end(), [=](uint32_t key) { return key > threshold; });
  for (int64_t i = 0; i < n; ++i) chosen[i] |= keys[i] > threshold;
  for (int64_t i = 0; ties > 0; ++i)
    if (keys[i] == threshold) {
      chosen[i] = 1;
      --ties;
    }
}

// N:M: fills every group of M consecutive elements of a row up to N with its largest keys, counting
// the elements `chosen` already holds first (they rank on top, with a key above any score's). An
// element is picked when fewer than N of its group outrank it. Ranks are counted a whole row at a
// time, comparing every element with the one d places on for each d < M: contiguous loops the
// compiler vectorizes. A selection per group of four cost several times the rest of topk_mask.
void choose_per_group(std::span<const uint32_t> keys, const FormatSpec& format, int64_t cols, uint8_t* chosen) {
  std::vector<uint32_t> row(cols);
  std::vector<uint8_t> outranked_by(cols), position(cols);  // bytes: M <= 32, and more lanes per vector
  for (int64_t c = 0; c < cols; ++c) position[c] = static_cast<uint8_t>(c % format.m);
  for (std::size_t first = 0; first < keys.size(); first += cols) {
    uint8_t* held = chosen + first;
    for (int64_t c = 0; c < cols; ++c) row[c] = held[c] ? UINT32_MAX : keys[first + c];
    std::fill(outranked_by.begin(), outranked_by.end(), 0);
    for (int d = 1; d < format.m; ++d) {
      // A later element outranks when larger, an earlier one when larger or equal.
      for (int64_t c = 0; c + d < cols; ++c) outranked_by[c] += position[c] + d < format.m && row[c + d] > row[c];
      for (int64_t c = d; c < cols; ++c) outranked_by[c] += position[c] >= d && row[c - d] >= row[c];
    }
    for (int64_t c = 0; c < cols; ++c) held[c] |= outranked_by[c] < format.n;
  }
}

UnitGrid checked_grid(const char* who, ConstMatrixView score, const FormatSpec& format, const Mask* mask = nullptr) {
  if (mask && (mask->rows() != score.rows || mask->cols() != score.cols))
    fail("{}: score is {}x{} but mask is {}x{}; expected the same shape", who, score.rows, score.cols, mask->rows(),
         mask->cols());
  if (format.kind == FormatKind::NM && score.cols % format.m != 0)
    fail("{}: score is {}x{}; {} expected cols to be a multiple of {}", who, score.rows, score.cols, format.name(),
         format.m);
  return unit_grid(format, score.rows, score.cols);
}

void check_count(const char* who, const char* what, int64_t count, const UnitGrid& g, const FormatSpec& format) {
  if (count < 0 || count > g.units())
    fail("{}: {} {} is outside [0, {}], the units of a {}x{} {} mask", who, what, count, g.units(), g.rows, g.cols,
         format.name());
}

int64_t count_present(const std::vector<uint8_t>& present) { return std::count(present.begin(), present.end(), 1); }

}  // namespace

int64_t mask_units(const FormatSpec& format, int64_t rows, int64_t cols) {
  return unit_grid(format, rows, cols).units();
}

int64_t units_kept_by(const Mask& mask, const FormatSpec& format) {
  const UnitGrid g = unit_grid(format, mask.rows(), mask.cols());
  if (g.b == 1) return mask.nnz();  // units are elements: no per-unit table to build
  return count_present(present_units("units_kept_by", g, mask, format));
}

int64_t kept_units(double sparsity, int64_t units) {
  if (!(sparsity >= 0.0 && sparsity <= 1.0)) fail("kept_units: sparsity {} is outside [0, 1]", sparsity);
  // The epsilon stops a product such as (1 - 0.9) * 100 = 9.999999999999998 from losing a unit.
  return static_cast<int64_t>(std::floor((1.0 - sparsity) * static_cast<double>(units) + 1e-9));
}

Mask topk_mask(ConstMatrixView score, const FormatSpec& format, int64_t keep_units) {
  const UnitGrid g = checked_grid("topk_mask", score, format);
  const std::vector<uint32_t> keys = unit_keys(g, score);
  std::vector<uint8_t> chosen(keys.size(), 0);
  if (format.kind == FormatKind::NM) {
    choose_per_group(keys, format, g.cols, chosen.data());
  } else {
    check_count("topk_mask", "keep_units", keep_units, g, format);
    choose_largest(keys, keep_units, chosen.data());
  }
  return to_mask(g, chosen);
}

Mask drop_minimum(ConstMatrixView score, const Mask& mask, const FormatSpec& format, int64_t keep_units) {
  const UnitGrid g = checked_grid("drop_minimum", score, format, &mask);
  check_count("drop_minimum", "keep_units", keep_units, g, format);
  const std::vector<uint8_t> present = present_units("drop_minimum", g, mask, format);
  std::vector<uint32_t> keys = unit_keys(g, score);
  for (std::size_t u = 0; u < keys.size(); ++u)
    if (!present[u]) keys[u] = 0;
  std::vector<uint8_t> chosen(keys.size(), 0);
  choose_largest(keys, std::min(keep_units, count_present(present)), chosen.data());
  return to_mask(g, chosen);
}

Mask grow_maximum(ConstMatrixView score, const Mask& mask, const FormatSpec& format, int64_t target_units) {
  const UnitGrid g = checked_grid("grow_maximum", score, format, &mask);
  std::vector<uint8_t> kept = present_units("grow_maximum", g, mask, format);
  std::vector<uint32_t> keys = unit_keys(g, score);
  if (format.kind == FormatKind::NM) {
    choose_per_group(keys, format, g.cols, kept.data());
  } else {
    check_count("grow_maximum", "target_units", target_units, g, format);
    for (std::size_t u = 0; u < keys.size(); ++u)
      if (kept[u]) keys[u] = 0;
    choose_largest(keys, std::max<int64_t>(0, target_units - count_present(kept)), kept.data());
  }
  return to_mask(g, kept);
}

}  // namespace sparsetrain
