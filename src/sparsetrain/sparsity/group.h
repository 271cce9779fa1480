#pragma once
// Group: several algorithms applied to one model, each to its own parameters. A parameter goes
// to the first member whose filter matches it (Cerebras' list form; members do not inherit
// from each other).
#include <memory>
#include <vector>

#include "sparsetrain/sparsity/algorithm.h"

namespace sparsetrain {

class Group final : public SparsityAlgorithm {
 public:
  Group();
  std::string name() const override { return "group"; }

  // A Group cannot be a member (as in Cerebras).
  void add(std::unique_ptr<SparsityAlgorithm> member);
  const std::vector<std::unique_ptr<SparsityAlgorithm>>& members() const { return members_; }
  std::vector<const SparsityAlgorithm*> leaf_algorithms() const override;

  using SparsityAlgorithm::apply;
  int apply(Module& model) override;
  void prepare_step(int64_t step) override;
  void update(int64_t step) override;
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;

 private:
  std::vector<std::unique_ptr<SparsityAlgorithm>> members_;
};

}  // namespace sparsetrain
