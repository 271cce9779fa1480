#pragma once
// Shared checks for the optimizer tests: the sparse guarantees every optimizer must keep.
//
//   expect_sparse_matches_dense_twin   a masked-dense or compressed parameter updates exactly like
//                                      a dense twin holding zeros at the pruned positions, bit for
//                                      bit; pruned values and state stay 0 even with a NaN gradient
//                                      in a pruned slot
//   expect_mask_change_remaps_state    set_mask() from a post-step hook: survivors keep value and
//                                      state bit for bit, regrown connections start at zero state
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "error_of.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/nn/parameter.h"
#include "sparsetrain/optim/optimizer.h"

namespace sparsetrain::optim_test {

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Parameter*>)>;

inline uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

// Uniform in [-scale, scale), never exactly zero in practice.
inline float uniform(uint64_t seed, std::string_view stream, uint64_t i, float scale = 1.0f) {
  return scale * (2.0f * Philox(seed, stream).uniform(i) - 1.0f);
}

// One float32 operation, rounded on its own: the volatile keeps the compiler from fusing a
// product into the next addition, so a float32 mirror of PyTorch's op sequence is exact as long
// as every operand comes from memory or from one of these helpers.
inline float f32_mul(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float f32_add(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline float f32_sub(float a, float b) {
  volatile float r = a - b;
  return r;
}
inline float f32_div(float a, float b) {
  volatile float r = a / b;
  return r;
}

// Where each entry of values() sits in the [rows x cols] matrix (r * cols + c): the identity for
// dense storage, the kernel format's entry order for a compressed parameter.
inline std::vector<int64_t> entry_positions(const Parameter& p) {
  std::vector<int64_t> pos;
  if (p.storage() != Storage::Compressed) {
    for (int64_t i = 0; i < p.numel(); ++i) pos.push_back(i);
    return pos;
  }
  Matrix index(p.rows(), p.cols());
  for (int64_t i = 0; i < p.numel(); ++i) index.data()[i] = static_cast<float>(i);
  auto w = SparseWeight::from_dense(p.compressed().format(), index, p.mask());
  for (float v : w->values()) pos.push_back(static_cast<int64_t>(v));
  return pos;
}

// A buffer laid out like p.values(), as a dense [rows * cols] array (zeros where nothing is stored).
inline std::vector<float> scatter(const Parameter& p, std::span<const float> entries) {
  const std::vector<int64_t> pos = entry_positions(p);
  EXPECT_EQ(pos.size(), entries.size());
  std::vector<float> dense(static_cast<std::size_t>(p.numel()), 0.0f);
  for (std::size_t i = 0; i < pos.size() && i < entries.size(); ++i)
    dense[static_cast<std::size_t>(pos[i])] = entries[i];
  return dense;
}

// A 6x8 weight with nonzero values, sparse under `mask`: compressed when `format` is given.
inline Parameter make_sparse(const Mask& mask, std::optional<FormatSpec> format, int64_t reserve = 0) {
  Parameter p("h.0.mlp.c_fc.weight", {mask.rows(), mask.cols()});
  auto v = p.values();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = uniform(11, "values", i) + (i % 2 ? 1.5f : -1.5f);
  p.sparsify(mask, format, reserve);
  return p;
}

// Writes the dense gradient `g` [rows * cols] into p.grad(), entry by entry.
inline void set_grad(Parameter& p, const std::vector<float>& g) {
  const std::vector<int64_t> pos = entry_positions(p);
  auto grad = p.grad();
  for (std::size_t i = 0; i < pos.size(); ++i) grad[i] = g[static_cast<std::size_t>(pos[i])];
}

inline void expect_sparse_matches_dense_twin(std::optional<FormatSpec> format, const MakeOptimizer& make,
                                             const std::vector<std::string>& keys, int steps = 4) {
  const Mask mask = random_mask(FormatSpec::csr(), 6, 8, 0.5, Philox(5, "mask"));
  Parameter sparse = make_sparse(mask, format);
  Parameter twin("twin", {6, 8});
  twin.assign_dense(sparse.to_dense());
  auto opt = make({&sparse});
  auto twin_opt = make({&twin});
  const auto n = static_cast<std::size_t>(sparse.numel());
  std::size_t nan_slot = n;  // the first pruned position
  for (std::size_t i = 0; i < n && nan_slot == n; ++i)
    if (!mask.data()[i]) nan_slot = i;
  ASSERT_LT(nan_slot, n);

  for (int s = 1; s <= steps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    std::vector<float> g(n), masked(n);
    for (std::size_t i = 0; i < n; ++i) {
      g[i] = uniform(static_cast<uint64_t>(s), "grad", i);
      masked[i] = mask.data()[i] ? g[i] : 0.0f;
    }
    std::copy(masked.begin(), masked.end(), twin.grad().begin());
    if (format) {
      set_grad(sparse, g);
    } else {
      g[nan_slot] = NAN;  // garbage in a pruned slot must not reach anything
      std::copy(g.begin(), g.end(), sparse.grad().begin());
    }
    opt->step();
    twin_opt->step();
    if (!format) {
      EXPECT_EQ(sparse.grad()[nan_slot], 0.0f) << "the NaN was not masked out";
    }

    const Matrix got = sparse.to_dense();
    const Matrix want = twin.to_dense();
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::isfinite(got.data()[i])) << i;
      ASSERT_EQ(bits(got.data()[i]), bits(want.data()[i])) << "value " << i;
      if (!mask.data()[i]) {
        ASSERT_EQ(got.data()[i], 0.0f) << "pruned value " << i;
      }
    }
    for (const std::string& key : keys) {
      SCOPED_TRACE(key);
      ASSERT_EQ(sparse.state(key).size(), sparse.values().size());
      const std::vector<float> state = scatter(sparse, sparse.state(key).span());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isfinite(state[i])) << i;
        ASSERT_EQ(bits(state[i]), bits(twin.state(key)[i])) << "state " << i;
        if (!mask.data()[i]) {
          ASSERT_EQ(state[i], 0.0f) << "pruned state " << i;
        }
      }
    }
  }
  if (format) {
    EXPECT_EQ(sparse.values().size(), static_cast<std::size_t>(mask.nnz()));
  } else {
    EXPECT_EQ(sparse.values().size(), n);
  }
}

// `grown_state(key, g)`: the state a connection regrown before this step holds after one step
// with gradient g, starting from zero.
inline void expect_mask_change_remaps_state(std::optional<FormatSpec> format, const MakeOptimizer& make,
                                            const std::vector<std::string>& keys,
                                            const std::function<float(const std::string&, float)>& grown_state) {
  const Mask a = random_mask(FormatSpec::csr(), 6, 8, 0.5, Philox(1, "a"));
  const Mask b = random_mask(FormatSpec::csr(), 6, 8, 0.5, Philox(1, "b"));
  Parameter p = make_sparse(a, format, std::max(a.nnz(), b.nnz()));
  auto opt = make({&p});
  const auto n = static_cast<std::size_t>(p.numel());
  std::vector<float> values_before;
  std::vector<std::vector<float>> state_before;
  std::vector<int64_t> hook_steps;
  opt->add_post_step_hook([&](int64_t step) {
    hook_steps.push_back(step);
    if (step != 2) return;
    values_before = scatter(p, p.values());
    for (const std::string& key : keys) state_before.push_back(scatter(p, p.state(key).span()));
    p.set_mask(b);
  });
  auto set_step_grad = [&](int s) {
    std::vector<float> g(n);
    for (std::size_t i = 0; i < n; ++i) g[i] = uniform(static_cast<uint64_t>(s), "grad", i);
    if (format) {
      set_grad(p, g);
    } else {
      std::copy(g.begin(), g.end(), p.grad().begin());
    }
    return g;
  };
  for (int s = 1; s <= 2; ++s) {
    set_step_grad(s);
    opt->step();
  }
  ASSERT_TRUE(p.mask() == b);
  ASSERT_EQ(state_before.size(), keys.size());

  int64_t survivors = 0, grown = 0;
  const std::vector<float> values = scatter(p, p.values());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    SCOPED_TRACE(keys[k]);
    ASSERT_EQ(p.state(keys[k]).size(), p.values().size());
    const std::vector<float> state = scatter(p, p.state(keys[k]).span());
    for (std::size_t i = 0; i < n; ++i) {
      const bool in_a = a.data()[i] != 0, in_b = b.data()[i] != 0;
      if (in_a && in_b) {
        ++survivors;
        ASSERT_NE(state_before[k][i], 0.0f) << "survivor " << i << " had no state to keep";
        ASSERT_EQ(bits(state[i]), bits(state_before[k][i])) << "survivor state " << i;
        ASSERT_EQ(bits(values[i]), bits(values_before[i])) << "survivor value " << i;
      } else {
        if (in_b) ++grown;
        ASSERT_EQ(state[i], 0.0f) << (in_b ? "regrown state " : "pruned state ") << i;
        ASSERT_EQ(values[i], 0.0f) << (in_b ? "regrown value " : "pruned value ") << i;
      }
    }
  }
  EXPECT_GT(survivors, 0);
  EXPECT_GT(grown, 0);

  // One more step: a regrown connection's state is its first update from zero.
  const std::vector<float> g3 = set_step_grad(3);
  opt->step();
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    const std::vector<float> state = scatter(p, p.state(key).span());
    for (std::size_t i = 0; i < n; ++i)
      if (b.data()[i] && !a.data()[i]) {
        ASSERT_EQ(bits(state[i]), bits(grown_state(key, g3[i]))) << "regrown " << i;
      }
  }
  EXPECT_EQ(hook_steps, (std::vector<int64_t>{1, 2, 3}));
}

}  // namespace sparsetrain::optim_test
