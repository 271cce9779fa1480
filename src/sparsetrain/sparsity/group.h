#pragma once
// Group: several algorithms applied to one model, each to its own parameters. A parameter goes
// to the first member whose filter matches it (Cerebras' list form; members do not inherit
// from each other).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sparsetrain/core/error.h"
#include "sparsetrain/sparsity/algorithm.h"

namespace sparsetrain {

// What a member refused while a Group applied it (a layer that would keep no block, ...): what()
// reads "group member 2 (rigl): <the member's message>"; a config's caller puts the member's own
// message after where that group is written.
class GroupMemberError : public Error {
 public:
  GroupMemberError(std::size_t member, const std::string& name, const std::string& detail);
  std::size_t member() const { return member_; }  // 0-based, in add() order
  const std::string& detail() const { return detail_; }

 private:
  std::size_t member_;
  std::string detail_;
};

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
