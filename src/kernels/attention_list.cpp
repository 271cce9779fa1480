// Implementation lists of the attention products.
#include "kernels/attention_kernels.h"
#include "kernels/kernel_list.h"

namespace sparsetrain {

namespace {
const KernelList<int64_t, AttentionScoresFn> kScores = SPARSETRAIN_KERNEL_LIST(attention_scores);
const KernelList<int64_t, AttentionRowsFn> kRows = SPARSETRAIN_KERNEL_LIST(attention_rows);
const KernelList<int64_t, AttentionColsFn> kCols = SPARSETRAIN_KERNEL_LIST(attention_cols);
}  // namespace

AttentionKernels attention_kernels(int64_t D) {
  return {pick("attention_scores", kScores, D).run, pick("attention_rows", kRows, D).run,
          pick("attention_cols", kCols, D).run};
}

}  // namespace sparsetrain
