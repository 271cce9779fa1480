#pragma once
// Multi-head self-attention, the core of a transformer block between c_attn and c_proj: causal
// (GPT-2) or bidirectional (BERT), with or without padding:
//
//   qkv [B*T x 3C]  token-major; columns [0, C) are the queries, [C, 2C) the keys, [2C, 3C) the
//                   values; head h owns columns [h*D, (h+1)*D) of each, D = C / H
//   att[b, h]       = softmax(q k^T / sqrt(D)) over the keys s that query t sees   [T x T]:
//                     s < L = lengths[b] (T without lengths), and s <= t as well when causal
//   out [B*T x C]   = att v, heads side by side in the same column layout
//
// With lengths, row b holds L real tokens and then padding: no query sees a padded key, and
// nothing in a padded key or value (not even NaN) reaches any output; a padded query sees the
// real keys like any other and gets a finite output, for the caller to ignore. In the backward
// pass the padded keys' and values' gradients are zero.
//
// The softmax probabilities are saved for the backward pass: B*H*T*T floats,
//   probs[((b*H + h)*T + t)*T + s] = att[b, h][t, s]
// with the entries of unseen keys written as zero. Work is split over (batch, head) pairs;
// every output element is computed by one thread in a fixed order, so results do not depend
// on the thread count.
#include <cstdint>

#include "sparsetrain/core/philox.h"
#include "sparsetrain/core/precision.h"
#include "sparsetrain/core/tensor.h"

namespace sparsetrain {

struct AttentionShape {
  int64_t batch = 0;     // B
  int64_t seq = 0;       // T
  int64_t heads = 0;     // H
  int64_t channels = 0;  // C, a multiple of H
  bool causal = true;
  const int32_t* lengths = nullptr;  // [B] real tokens per row, each in [1, T]; nullptr: all T
  // Dropout on the probabilities (training; torch's attention_probs_dropout): att v uses
  // att[t, s] * keep / (1 - dropout), keep = rng->uniform(i) >= dropout at element
  // i = (((first_row + b) * H + h) * T + t) * T + s, so a data-parallel rank holding rows
  // first_row, ... drops what one process drops. probs still holds the softmax itself; the
  // backward pass draws the same keeps again (nothing more is stored).
  float dropout = 0.0f;
  const Philox* rng = nullptr;
  int64_t first_row = 0;
  // Bf16: the five products take bf16-rounded operands (q, k, v, the probabilities, the output's
  // and the scores' gradients) with float32 accumulation, where the CPU has AVX512-BF16
  // (kernels/attention_kernels.h); the softmax, its backward pass and dropout stay float32.
  Precision precision = Precision::Fp32;

  int64_t head_dim() const { return channels / heads; }
  int64_t probs_size() const { return batch * heads * seq * seq; }
};

// out (overwritten) and probs [probs_size()] from qkv. Fails on lengths outside [1, T].
void attention_forward(const AttentionShape& s, ConstMatrixView qkv, MatrixView out, float* probs);

// dqkv [B*T x 3C] (overwritten) from dout [B*T x C], the forward's qkv and probs.
void attention_backward(const AttentionShape& s, ConstMatrixView dout, ConstMatrixView qkv, const float* probs,
                        MatrixView dqkv);

}  // namespace sparsetrain
