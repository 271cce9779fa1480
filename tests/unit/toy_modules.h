#pragma once
// Small module trees for tests: a Linear-like leaf whose type can pose as any module kind.
#include <cmath>
#include <memory>

#include "sparsetrain/nn/module.h"

namespace sparsetrain::testing {

struct ToyLinear : Module {
  ToyLinear(int64_t in, int64_t out, const char* type = "Linear") : Module(type) {
    weight = &register_parameter("weight", {out, in});
    bias = &register_parameter("bias", {out});
  }
  Parameter* weight;
  Parameter* bias;
};

// Distinct nonzero values of either sign in every parameter, in registration order.
inline void fill_distinct(Module& m) {
  int i = 0;
  for (Parameter* p : m.parameters())
    for (float& v : p->values()) v = std::sin(static_cast<float>(++i)) * 2.0f;
}

}  // namespace sparsetrain::testing
