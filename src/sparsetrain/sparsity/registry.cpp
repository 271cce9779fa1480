#include "sparsetrain/sparsity/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "sparsetrain/core/error.h"
#include "sparsetrain/sparsity/algorithms.h"
#include "sparsetrain/sparsity/group.h"

namespace sparsetrain {

namespace {

struct Entry {
  AlgorithmFactory factory;
  AlgorithmKeys keys;
};

// The optional extra keys of SET and RigL: `grow_init_std` (a number >= 0) and `drop_by_sign`
// (true or false).
template <typename A>
std::unique_ptr<SparsityAlgorithm> with_extras(std::unique_ptr<A> algorithm, const AlgorithmSpec& spec) {
  if (const auto it = spec.extra.find("grow_init_std"); it != spec.extra.end()) {
    char* end = nullptr;
    const double std = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0')
      fail("{}: 'grow_init_std' must be a number >= 0, got '{}'", algorithm->name(), it->second);
    algorithm->set_grow_init_std(std);
  }
  if (const auto it = spec.extra.find("drop_by_sign"); it != spec.extra.end()) {
    if (it->second != "true" && it->second != "false")
      fail("{}: 'drop_by_sign' must be true or false, got '{}'", algorithm->name(), it->second);
    algorithm->set_drop_by_sign(it->second == "true");
  }
  return algorithm;
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry> entries;

  Registry() {
    entries["static"] = {[](const AlgorithmSpec& s) { return std::make_unique<Static>(s.sparsity.at(0), s.options); },
                         {KeyRule::Rejected, KeyRule::Rejected, LevelRule::Constant, {}}};
    entries["gmp"] = {[](const AlgorithmSpec& s) { return std::make_unique<GMP>(s.sparsity, *s.update, s.options); },
                      {KeyRule::Required, KeyRule::Rejected, LevelRule::Changing, {}}};
    entries["set"] = {[](const AlgorithmSpec& s) {
                        return with_extras(
                            std::make_unique<SET>(s.sparsity, *s.update, *effective_drop_fraction(s), s.options), s);
                      },
                      {KeyRule::Required, KeyRule::Optional, LevelRule::Any, {"grow_init_std", "drop_by_sign"}}};
    entries["rigl"] = {[](const AlgorithmSpec& s) {
                         return with_extras(
                             std::make_unique<RigL>(s.sparsity, *s.update, *effective_drop_fraction(s), s.options), s);
                       },
                       {KeyRule::Required, KeyRule::Optional, LevelRule::Any, {"grow_init_std", "drop_by_sign"}}};
  }
};

// Built-ins are registered on first use, so no static-initialization order matters.
Registry& registry() {
  static Registry r;
  return r;
}

bool valid_name(const std::string& name) {
  if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::vector<std::string> names_locked(const Registry& r) {
  std::vector<std::string> names;
  for (const auto& [name, entry] : r.entries) names.push_back(name);
  return names;  // std::map keeps them sorted
}

}  // namespace

const std::vector<std::string>& common_algorithm_keys() {
  static const std::vector<std::string> keys = {"algorithm",
                                                "type",
                                                "sparsity",
                                                "schedule",
                                                "update",
                                                "drop_fraction",
                                                "init_method",
                                                "param_filter",
                                                "balance_in_groups",
                                                "balance_out_groups",
                                                "format",
                                                "distribution",
                                                "seed",
                                                "overrides",
                                                "groups",
                                                "params",
                                                "param_name_patterns",
                                                "out_groups",
                                                "in_groups",
                                                "dump_masks"};
  return keys;
}

void register_algorithm(const std::string& name, AlgorithmFactory factory, AlgorithmKeys allowed_keys) {
  if (!valid_name(name))
    fail("register_algorithm: name '{}' must be lower-case letters, digits and '_', starting with a letter", name);
  if (name == "group") fail("register_algorithm: 'group' is reserved (groups do not nest)");
  if (!factory) fail("register_algorithm: '{}' has no factory", name);
  const auto& common = common_algorithm_keys();
  for (std::size_t i = 0; i < allowed_keys.extra.size(); ++i) {
    const std::string& key = allowed_keys.extra[i];
    if (std::find(common.begin(), common.end(), key) != common.end())
      fail("register_algorithm: '{}' declares extra key '{}', which every algorithm already has", name, key);
    if (std::find(allowed_keys.extra.begin(), allowed_keys.extra.begin() + static_cast<std::ptrdiff_t>(i), key) !=
        allowed_keys.extra.begin() + static_cast<std::ptrdiff_t>(i))
      fail("register_algorithm: '{}' declares extra key '{}' twice", name, key);
  }
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (r.entries.count(name)) fail("register_algorithm: '{}' is already registered", name);
  r.entries[name] = {std::move(factory), std::move(allowed_keys)};
}

std::optional<AlgorithmKeys> algorithm_keys(const std::string& name) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const auto it = r.entries.find(name);
  if (it == r.entries.end()) return std::nullopt;
  return it->second.keys;
}

std::optional<LevelSchedule> effective_drop_fraction(const AlgorithmSpec& spec) {
  if (spec.drop_fraction) return spec.drop_fraction;
  if (spec.algorithm == "set" || spec.algorithm == "rigl") return LevelSchedule::constant(kDefaultDropFraction);
  return std::nullopt;
}

std::vector<std::string> registered_algorithms() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return names_locked(r);
}

std::string unknown_algorithm_message(const std::string& name) {
  return fmt::format("unknown algorithm '{}'; registered: {}", name, fmt::join(registered_algorithms(), ", "));
}

std::optional<std::string> update_rule_violation(const std::string& algorithm, const AlgorithmKeys& keys, bool given,
                                                 const std::string& key) {
  if (keys.update == KeyRule::Rejected && given)
    return fmt::format("{} takes no update schedule: its masks never change", algorithm);
  if (keys.update == KeyRule::Required && !given)
    return fmt::format("missing '{}': {} needs an update schedule ({{freq, start, stop}} or {{steps: [...]}})", key,
                       algorithm);
  return std::nullopt;
}

std::optional<std::string> drop_fraction_rule_violation(const std::string& algorithm, const AlgorithmKeys& keys,
                                                        bool given) {
  if (keys.drop_fraction == KeyRule::Rejected && given)
    return fmt::format("{} takes no drop_fraction: it does not regrow connections", algorithm);
  if (keys.drop_fraction == KeyRule::Required && !given)
    return fmt::format("missing 'drop_fraction': {} needs one", algorithm);
  return std::nullopt;
}

std::string level_rule_expectation(const std::string& algorithm, LevelRule rule) {
  switch (rule) {
    case LevelRule::Constant: return fmt::format("a number in [0, 1) ({} keeps one fixed level)", algorithm);
    case LevelRule::Changing:
      return fmt::format("a schedule that changes with the step ({} never prunes at a constant level)", algorithm);
    case LevelRule::Any: break;
  }
  fail("level_rule_expectation: {} takes any level, so no level breaks its rule", algorithm);
}

std::optional<std::string> level_rule_violation(const std::string& algorithm, const AlgorithmKeys& keys,
                                                const LevelSchedule& level, const std::string& got) {
  const bool holds = keys.level == LevelRule::Any ||
                     (keys.level == LevelRule::Constant && level.is_constant() && level.at(0) < 1.0) ||
                     (keys.level == LevelRule::Changing && level.changes());
  const std::string written = got.empty() ? level.describe() : got;
  if (!holds) return fmt::format("expected {}, got {}", level_rule_expectation(algorithm, keys.level), written);
  // One rule for every algorithm: a layer at level 1 keeps no weight, so no output and no gradient.
  if (level.writes_level_one())
    return fmt::format("expected a level below 1 ({} would keep no weight of a layer at level 1), got {}", algorithm,
                       written);
  return std::nullopt;
}

std::optional<std::string> format_rule_violation(const AlgorithmSpec& spec) {
  const std::optional<FormatSpec>& f = spec.options.format;
  if (!f || f->kind != FormatKind::NM) return std::nullopt;
  const double fixed = f->implied_sparsity();
  const auto same = [&](double level) { return std::fabs(level - fixed) <= 1e-3; };
  std::string asked;
  if (!spec.sparsity.is_constant())
    asked = fmt::format("changes with the step ({})", spec.sparsity.describe());
  else if (!same(spec.sparsity.at(0)))
    asked = fmt::format("is {}", spec.sparsity.at(0));
  else if (spec.options.distribution != Distribution::Uniform)
    asked = fmt::format("is spread by distribution {} into a level per parameter",
                        distribution_name(spec.options.distribution));
  for (const auto& [name, level] : spec.options.overrides)
    if (asked.empty() && !same(level)) asked = fmt::format("is overridden to {} for '{}'", level, name);
  if (asked.empty()) return std::nullopt;
  return fmt::format(
      "format '{}' keeps {} of every {} weights, a fixed level of {:g}, but the sparsity {}; give sparsity {:g}, "
      "or a format whose level follows the sparsity (csr, bcsr4, bcsr8, bcsr16 or auto)",
      f->name(), f->n, f->m, fixed, asked, fixed);
}

void check_spec(const AlgorithmSpec& spec) {
  const std::optional<AlgorithmKeys> keys = algorithm_keys(spec.algorithm);
  if (!keys) fail("{}", unknown_algorithm_message(spec.algorithm));
  const std::string& name = spec.algorithm;
  for (const std::optional<std::string>& violation :
       {update_rule_violation(name, *keys, spec.update.has_value()),
        drop_fraction_rule_violation(name, *keys, spec.drop_fraction.has_value()),
        level_rule_violation(name, *keys, spec.sparsity), format_rule_violation(spec)})
    if (violation) fail("{}", *violation);
  for (const auto& [key, value] : spec.extra)
    if (std::find(keys->extra.begin(), keys->extra.end(), key) == keys->extra.end())
      fail("{}: unknown extra key '{}'{}", name, key,
           keys->extra.empty() ? std::string(" (it takes none)")
                               : fmt::format("; it takes {}", fmt::join(keys->extra, ", ")));
}

std::unique_ptr<SparsityAlgorithm> make_algorithm(const AlgorithmSpec& spec) {
  check_spec(spec);
  AlgorithmFactory factory;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    factory = r.entries.at(spec.algorithm).factory;
  }
  std::unique_ptr<SparsityAlgorithm> algorithm = factory(spec);
  if (!algorithm) fail("{}: the registered factory returned no algorithm", spec.algorithm);
  if (dynamic_cast<const Group*>(algorithm.get()) != nullptr)
    fail("{}: the registered factory returned a group; groups do not nest", spec.algorithm);
  return algorithm;
}

}  // namespace sparsetrain
