// Causal multi-head attention, forward and backward, at the end-to-end benchmark GPT's shape
// (configs/bench_gpt_*.yaml: batch 8, context 256, width 512, 8 heads), in fp32 and in bf16
// (precision:1, the AVX512-BF16 products where the CPU has them). GFLOP/s counts the useful
// causal products only: forward q k^T and att v, backward four products of that size.
#include <vector>

#include "bench_common.h"
#include "sparsetrain/ops/attention.h"

namespace sparsetrain::bench {
namespace {

constexpr AttentionShape kShape{.batch = 8, .seq = 256, .heads = 8, .channels = 512};

struct AttentionLayer {
  const AttentionShape shape;
  const int64_t rows = kShape.batch * kShape.seq, C = kShape.channels;
  Matrix qkv = random_matrix(rows, 3 * C, "qkv"), dout = random_matrix(rows, C, "dout");
  Matrix out{rows, C}, dqkv{rows, 3 * C};
  std::vector<float> probs =
      std::vector<float>(static_cast<std::size_t>(kShape.batch * kShape.heads * kShape.seq * kShape.seq));
  explicit AttentionLayer(const benchmark::State& state) : shape(shape_of(state)) {
    attention_forward(shape, qkv, out, probs.data());
  }
  static AttentionShape shape_of(const benchmark::State& state) {
    AttentionShape s = kShape;
    s.precision = state.range(0) == 1 ? Precision::Bf16 : Precision::Fp32;
    return s;
  }
};

// One causal product: sum over t of (t + 1) key positions, D multiply-adds each, per pair.
double causal_product_flops() {
  const double T = static_cast<double>(kShape.seq), D = static_cast<double>(kShape.head_dim());
  return 2.0 * static_cast<double>(kShape.batch * kShape.heads) * D * T * (T + 1) / 2;
}

void set_counters(benchmark::State& state, int products) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(products * causal_product_flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void attention_fwd(benchmark::State& state) {
  AttentionLayer l(state);
  for (auto _ : state) attention_forward(l.shape, l.qkv, l.out, l.probs.data());
  set_counters(state, 2);
}

void attention_bwd(benchmark::State& state) {
  AttentionLayer l(state);
  for (auto _ : state) attention_backward(l.shape, l.dout, l.qkv, l.probs.data(), l.dqkv);
  set_counters(state, 4);
}

}  // namespace

BENCHMARK(attention_fwd)->ArgName("precision")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(attention_bwd)->ArgName("precision")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace sparsetrain::bench
