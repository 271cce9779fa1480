#pragma once
// Whole-model gradients by central finite differences: the loss of a float32 forward pass is
// perturbed by +-h per probed value and compared with the analytic gradient of backward().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sparsetrain/models/model.h"

namespace sparsetrain::testing {

// Probes up to `per_tensor` trainable values of every parameter.
inline void check_gradients(Model& model, const Batch& batch, int per_tensor, double tolerance) {
  const uint64_t seed = 5;
  const int64_t step = 3;
  for (Parameter* p : model.parameters()) p->zero_grad();
  model.forward(batch, true, seed, step);
  model.backward();
  for (Parameter* p : model.parameters()) {
    auto values = p->values();
    const std::vector<float> grad(p->grad().begin(), p->grad().end());
    const std::size_t n = values.size();
    const std::size_t stride = std::max<std::size_t>(1, n / static_cast<std::size_t>(per_tensor));
    for (std::size_t i = (n / 3) % stride; i < n; i += stride) {
      const float saved = values[i];
      const double h = 1e-2 * std::max(1.0, std::fabs(static_cast<double>(saved)));
      values[i] = static_cast<float>(saved + h);
      const double up = model.forward(batch, true, seed, step).loss;
      values[i] = static_cast<float>(saved - h);
      const double down = model.forward(batch, true, seed, step).loss;
      values[i] = saved;
      const double numeric = (up - down) / (2.0 * h);
      const double analytic = grad[i];
      ASSERT_NEAR(analytic, numeric, tolerance * (1.0 + std::fabs(numeric)))
          << p->name() << "[" << i << "] (" << storage_name(p->storage()) << ")";
    }
  }
}

}  // namespace sparsetrain::testing
