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
// bf16: the AVX512-BF16 entries (any D; pairs past an odd count are zero-padded), then the float32
// list.
const KernelList<int64_t, AttentionScoresFn> kScoresBf16 =
    SPARSETRAIN_IMPL_LIST_AFTER(SCORES(avx512_bf16), SCORES, attention_scores);
const KernelList<int64_t, AttentionRowsFn> kRowsBf16 =
    SPARSETRAIN_IMPL_LIST_AFTER(ROWS(avx512_bf16), ROWS, attention_rows);
const KernelList<int64_t, AttentionColsFn> kColsBf16 =
    SPARSETRAIN_IMPL_LIST_AFTER(COLS(avx512_bf16), COLS, attention_cols);
}  // namespace

AttentionKernels attention_kernels(int64_t D, Precision precision) {
  const bool bf16 = precision == Precision::Bf16;
  return {pick("attention_scores", bf16 ? kScoresBf16 : kScores, D).run,
          pick("attention_rows", bf16 ? kRowsBf16 : kRows, D).run,
          pick("attention_cols", bf16 ? kColsBf16 : kCols, D).run};
}

}  // namespace sparsetrain
