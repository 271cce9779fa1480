#include "sparsetrain/sparsity/group.h"

#include <fmt/format.h>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

GroupMemberError::GroupMemberError(std::size_t member, const std::string& name, const std::string& detail)
    : Error(fmt::format("group member {} ({}): {}", member + 1, name, detail)), member_(member), detail_(detail) {}

Group::Group() : SparsityAlgorithm(LevelSchedule::constant(0.0), {}) {}

void Group::add(std::unique_ptr<SparsityAlgorithm> member) {
  if (dynamic_cast<Group*>(member.get())) fail("group: a group cannot contain another group");
  if (!params_.empty()) fail("group: members must be added before apply()");
  members_.push_back(std::move(member));
}

std::vector<const SparsityAlgorithm*> Group::leaf_algorithms() const {
  std::vector<const SparsityAlgorithm*> leaves;
  for (const auto& m : members_) leaves.push_back(m.get());
  return leaves;
}

int Group::apply(Module& model) {
  std::vector<std::vector<Module::Entry>> chosen(members_.size());
  for (const Module::Entry& e : model.named_parameters()) {
    if (e.requires_dense || e.param->is_sparse()) continue;
    for (std::size_t i = 0; i < members_.size(); ++i)
      if (members_[i]->options().filter.matches(e)) {
        chosen[i].push_back(e);
        params_.push_back(e.param);
        break;
      }
  }
  for (std::size_t i = 0; i < members_.size(); ++i)
    require_claimed(fmt::format("group member {} ({})", i + 1, members_[i]->name()), members_[i]->options().filter,
                    chosen[i].size(), model);
  for (std::size_t i = 0; i < members_.size(); ++i) {
    try {
      members_[i]->claim(chosen[i]);
    } catch (const Error& e) {
      throw GroupMemberError(i, members_[i]->name(), e.what());
    }
  }
  return static_cast<int>(params_.size());
}

void Group::prepare_step(int64_t step) {
  for (auto& m : members_) m->prepare_step(step);
}

void Group::update(int64_t step) {
  for (auto& m : members_) m->update(step);
}

nlohmann::json Group::state() const {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : members_) members.push_back(m->state());
  return {{"algorithm", name()}, {"members", members}};
}

void Group::load_state(const nlohmann::json& state) {
  if (!state.is_object() || state.value("algorithm", "") != name() || !state.contains("members") ||
      !state["members"].is_array())
    fail("sparsity state: expected a group with a 'members' list, got {}", state.dump());
  const nlohmann::json& members = state["members"];
  if (members.size() != members_.size())
    fail("sparsity state: saved for a group of {} algorithms, this run has {}", members.size(), members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i) members_[i]->load_state(members[i]);
}

}  // namespace sparsetrain
