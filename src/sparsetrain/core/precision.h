#pragma once
// The arithmetic a run trains in: float32 throughout, or bf16 mixed precision (products on bf16
// operands with float32 accumulation; master weights, optimizer state, reductions and the loss in
// float32). See docs/training.md, "Mixed precision".
#include <string_view>

namespace sparsetrain {

enum class Precision { Fp32, Bf16 };

// "fp32" or "bf16", as --precision and checkpoints spell them.
std::string_view precision_name(Precision p);
// Parses "fp32" or "bf16"; throws Error naming `source` and the accepted values otherwise.
Precision parse_precision(std::string_view text, std::string_view source);

}  // namespace sparsetrain
