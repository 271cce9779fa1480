#include "sparsetrain/core/precision.h"

#include "sparsetrain/core/error.h"

namespace sparsetrain {

std::string_view precision_name(Precision p) { return p == Precision::Bf16 ? "bf16" : "fp32"; }

Precision parse_precision(std::string_view text, std::string_view source) {
  if (text == "fp32") return Precision::Fp32;
  if (text == "bf16") return Precision::Bf16;
  fail("{}: unknown precision '{}'; expected fp32 or bf16", source, text);
}

}  // namespace sparsetrain
