// A user-defined algorithm: random pruning, a common baseline in the sparse-training
// literature. A DynamicSparsityAlgorithm only decides masks; update_mask() receives the current
// mask and the level the schedule asks for at this step, and returns the new mask. Storage,
// optimizer state and kernels follow on their own. Registered by name, it is selectable from a
// YAML config like the built-in algorithms.
//
//   build/examples/example_custom_algorithm
#include <cstdio>

#include <sparsetrain/config/sparsity_config.h>
#include <sparsetrain/optim/sgd.h>
#include <sparsetrain/sparsity/algorithm.h>
#include <sparsetrain/sparsity/mask_select.h>
#include <sparsetrain/sparsity/registry.h>

using namespace sparsetrain;

// Prunes uniformly at random among the kept weights down to the scheduled level; never regrows.
class RandomPrune final : public DynamicSparsityAlgorithm {
 public:
  using DynamicSparsityAlgorithm::DynamicSparsityAlgorithm;
  std::string name() const override { return "random_prune"; }

  Mask update_mask(Parameter& p, const Mask& mask, double sparsity, int64_t step) override {
    // Noise keyed by (seed, parameter name, step): the same run always prunes the same weights.
    return drop_minimum(random_scores(p, static_cast<uint64_t>(step)), mask, unit_format(p),
                        kept_units(sparsity, units(p)));
  }
};

struct Mlp : Module {
  Mlp() : Module("Mlp") {
    fc1 = &register_parameter("fc1", {256, 784});
    fc2 = &register_parameter("fc2", {10, 256});
  }
  Parameter *fc1, *fc2;
};

// The config a user would write: the algorithm by its registered name, pruning from dense to
// 90% along Zhu & Gupta's cubic ramp every 10 steps until step 100, in 4 x 4 blocks.
constexpr const char* kConfig = R"(
sparsity:
  algorithm: random_prune
  sparsity: {type: polynomial, init: 0.0, final: 0.9, begin: 0, end: 100}
  update: {freq: 10, stop: 101}
  format: bcsr4
)";

int main() {
  register_algorithm(
      "random_prune",
      [](const AlgorithmSpec& spec) {
        return std::make_unique<RandomPrune>(spec.sparsity, *spec.update, spec.options);
      },
      AlgorithmKeys{.update = KeyRule::Required, .level = LevelRule::Changing, .extra = {}});

  Mlp model;
  for (Parameter* p : model.parameters())
    for (float& v : p->values()) v = 0.01f;
  Sgd optimizer(model.parameters(), 0.1);

  const std::unique_ptr<SparsityAlgorithm> prune = load_sparsity_yaml(kConfig, "custom_algorithm.yaml").build();
  prune->apply(model);
  prune->apply(optimizer);

  for (int64_t step = 1; step <= 100; ++step) {
    optimizer.step();
    if (step % 20 == 0)
      std::printf("step %3lld  fc1 sparsity %.3f  fc2 sparsity %.3f\n", static_cast<long long>(step),
                  model.fc1->sparsity(), model.fc2->sparsity());
  }
  // The ramp ends at 90%: exact block counts (4 x 4 blocks, edge blocks included).
  const bool reached = model.fc1->kept() == kept_units(0.9, mask_units(FormatSpec::bcsr(4), 256, 784)) * 16;
  std::printf("%s: fc1 at 90%%: %s\n", prune->name().c_str(), reached ? "yes" : "no");
  return reached ? 0 : 1;
}
