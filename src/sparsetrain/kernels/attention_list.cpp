// Implementation lists of the attention products.
#include "sparsetrain/kernels/attention_kernels.h"
#include "sparsetrain/kernels/kernel_list.h"

namespace sparsetrain {

namespace {
// One entry per ISA, no rejections: every entry takes any head width D. The vector entries of
// rows and cols run the whole vectors of channels and finish the last D % W channels (all of
// them when D < W; W = 16 on AVX-512, 8 on AVX2) with the reference loops inside the same call,
// as a tail; scores pads its keys and has no tail.
#define SCORES(isa) SPARSETRAIN_IMPL(isa, attention_scores, nullptr)
#define ROWS(isa) SPARSETRAIN_IMPL(isa, attention_rows, nullptr)
#define COLS(isa) SPARSETRAIN_IMPL(isa, attention_cols, nullptr)
const KernelList<int64_t, AttentionScoresFn> kScores = SPARSETRAIN_IMPL_LIST(SCORES, attention_scores);
const KernelList<int64_t, AttentionRowsFn> kRows = SPARSETRAIN_IMPL_LIST(ROWS, attention_rows);
const KernelList<int64_t, AttentionColsFn> kCols = SPARSETRAIN_IMPL_LIST(COLS, attention_cols);
}  // namespace

AttentionKernels attention_kernels(int64_t D) {
  return {pick("attention_scores", kScores, D).run, pick("attention_rows", kRows, D).run,
          pick("attention_cols", kCols, D).run};
}

}  // namespace sparsetrain
