#pragma once
// The counting sort behind every transposed companion (TransposedPattern, N:M's group-ordered
// list), parallel over rows.
#include <algorithm>
#include <cstdint>

#include "sparsetrain/core/aligned_buffer.h"
#include "sparsetrain/core/parallel.h"

namespace sparsetrain {

// Stable sort by key of items listed row by row: the items of row r are [first(r), first(r + 1)),
// item i of row r has key(i, r) in [0, keys). place(slot, i, r) is called once per item with its sorted
// position. Each thread counts its own consecutive rows and the counts become per-thread
// cursors, so items of one key keep their row order. ptr receives the keys + 1 bucket starts;
// cursors is scratch kept by the caller so that rebuilds do not allocate.
template <typename First, typename Key, typename Place>
void stable_bucket_sort(int64_t rows, int64_t keys, First first, Key key, Place place, AlignedBuffer<int32_t>& ptr,
                        AlignedBuffer<int32_t>& cursors) {
  const int nth = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(num_threads(), rows)));
  cursors.assign(static_cast<std::size_t>(nth * keys), 0);
  ptr.resize(keys + 1);
  parallel_run(nth, [&](int ith, int n) {
    int64_t begin, end;
    balance_even(rows, ith, n, begin, end);
    int32_t* count = cursors.data() + ith * keys;
    for (int64_t r = begin; r < end; ++r)
      for (int64_t i = first(r); i < first(r + 1); ++i) ++count[key(i, r)];
  });
  int32_t total = 0;
  for (int64_t k = 0; k < keys; ++k) {
    ptr[k] = total;
    for (int t = 0; t < nth; ++t) {
      const int32_t count = cursors[t * keys + k];
      cursors[t * keys + k] = total;
      total += count;
    }
  }
  ptr[keys] = total;
  parallel_run(nth, [&](int ith, int n) {
    int64_t begin, end;
    balance_even(rows, ith, n, begin, end);
    int32_t* cursor = cursors.data() + ith * keys;
    for (int64_t r = begin; r < end; ++r)
      for (int64_t i = first(r); i < first(r + 1); ++i) place(cursor[key(i, r)]++, i, r);
  });
}

}  // namespace sparsetrain
