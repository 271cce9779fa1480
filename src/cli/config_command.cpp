#include "cli/config_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "sparsetrain/config/train_config.h"
#include "sparsetrain/sparsity/registry.h"
#include "sparsetrain/train/setup.h"

namespace sparsetrain {

namespace {

std::string describe_storage(const SparsityOptions& o) {
  if (o.auto_format) return "auto (csr at levels >= 0.7, masked-dense below)";
  return o.format ? o.format->name() : "masked-dense";
}

std::string describe_update(const AlgorithmSpec& spec) {
  return spec.update ? spec.update->describe() : "never (static masks)";
}

void print_group(std::size_t index, const AlgorithmSpec& spec) {
  const SparsityOptions& o = spec.options;
  fmt::print("group {}: {}\n", index + 1, spec.algorithm);
  fmt::print("  {:<14} {}\n", "sparsity", spec.sparsity.describe());
  fmt::print("  {:<14} {}\n", "update", describe_update(spec));
  if (spec.drop_fraction)
    fmt::print("  {:<14} {}\n", "drop_fraction", spec.drop_fraction->describe());
  else if (const auto drop = effective_drop_fraction(spec))
    fmt::print("  {:<14} {} (the default)\n", "drop_fraction", drop->describe());
  fmt::print("  {:<14} {}\n", "param_filter", o.filter.describe());
  fmt::print("  {:<14} {} (seed {})\n", "init_method", init_method_name(o.init_method),
             o.seed ? std::to_string(*o.seed) : std::string("of the run"));
  fmt::print("  {:<14} {}\n", "distribution", distribution_name(o.distribution));
  fmt::print("  {:<14} {}\n", "storage", describe_storage(o));
  if (o.balance_out_groups) fmt::print("  {:<14} {} output groups\n", "balanced", *o.balance_out_groups);
  if (o.balance_in_groups) fmt::print("  {:<14} {} input groups\n", "balanced", *o.balance_in_groups);
  for (const auto& [name, level] : o.overrides) fmt::print("  {:<14} {} at {}\n", "override", name, level);
  for (const auto& [key, value] : spec.extra) fmt::print("  {:<14} {}\n", key, value);
}

// The sparsity section group by group, as the config resolves it.
void print_sparsity(const std::string& file, const SparsityConfig& config) {
  for (const std::string& warning : config.warnings) fmt::print(stderr, "sparsetrain: warning: {}\n", warning);
  if (config.form == ConfigForm::None) {
    fmt::print("{}: no sparsity section; every parameter stays dense\n", file);
    return;
  }
  fmt::print(
      "{}: sparsity section in the {} form, {} group{}; a parameter goes to the first group whose filter "
      "matches\n",
      file, config_form_name(config.form), config.groups.size(), config.groups.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < config.groups.size(); ++i) print_group(i, config.groups[i]);
}

// Where the sparsity algorithm put a parameter: its group (1-based, the config's order), the
// algorithm deciding its masks and its level at step 0.
struct Claim {
  std::size_t group = 0;
  const SparsityAlgorithm* algorithm = nullptr;
  double level = 0.0;
};

std::map<const Parameter*, Claim> claims_of(const SparsityAlgorithm* sparsity) {
  std::map<const Parameter*, Claim> claims;
  if (sparsity == nullptr) return claims;
  const std::vector<const SparsityAlgorithm*> leaves = sparsity->leaf_algorithms();
  for (std::size_t g = 0; g < leaves.size(); ++g) {
    const std::vector<double> levels = leaves[g]->levels(0);
    const std::vector<Parameter*>& params = leaves[g]->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) claims[params[i]] = {g + 1, leaves[g], levels[i]};
  }
  return claims;
}

constexpr std::size_t kColumns = 12;
using Row = std::array<std::string, kColumns>;
const Row kHeader = {"parameter", "shape",     "elements", "kept",         "sparsity", "storage",
                     "group",     "algorithm", "level",    "distribution", "schedule", "update"};
constexpr std::array<bool, kColumns> kRightAligned = {false, false, true, true,  true,  false,
                                                      false, false, true, false, false, false};

// Columns as wide as their widest cell, the last one unpadded.
void print_table(const std::vector<Row>& rows) {
  std::array<std::size_t, kColumns> width{};
  for (const Row& row : rows)
    for (std::size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], row[c].size());
  for (const Row& row : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < kColumns; ++c) {
      const std::size_t w = c + 1 == kColumns ? 0 : width[c];
      line += kRightAligned[c] ? fmt::format(" {:>{}}", row[c], w) : fmt::format(" {:<{}}", row[c], w);
    }
    while (line.ends_with(' ')) line.pop_back();
    fmt::print("{}\n", line);
  }
}

double sparsity_of(int64_t kept, int64_t total) {
  return total > 0 ? 1.0 - static_cast<double>(kept) / static_cast<double>(total) : 0.0;
}

// Every parameter of the built model, in model order, with what the sparsity algorithm made of
// it, then the dense and kept totals.
void print_plan(const Setup& s) {
  fmt::print("model: {}\n", s.model->describe());
  const std::map<const Parameter*, Claim> claims = claims_of(s.sparsity.get());
  std::vector<Row> rows = {kHeader};
  int64_t total = 0, kept = 0, sparse_total = 0, sparse_kept = 0;
  std::size_t sparse_count = 0;
  for (const Module::Entry& e : s.model->named_parameters()) {
    const Parameter& p = *e.param;
    total += p.numel();
    kept += p.kept();
    Row row;
    row.fill("-");  // the group's columns of a parameter no group claimed
    row[0] = p.name();
    row[1] = fmt::format("{}", fmt::join(p.shape(), "x"));
    row[2] = fmt::format("{}", p.numel());
    row[3] = fmt::format("{}", p.kept());
    row[4] = fmt::format("{:.4f}", p.sparsity());
    row[5] = p.storage_label();
    if (const auto it = claims.find(&p); it != claims.end()) {
      const Claim& c = it->second;
      sparse_total += p.numel();
      sparse_kept += p.kept();
      ++sparse_count;
      row[6] = fmt::format("{}", c.group);
      row[7] = c.algorithm->name();
      row[8] = fmt::format("{:.4f}", c.level);
      row[9] = distribution_name(c.algorithm->options().distribution);
      // An override fixes the level for the whole run; the group's schedule does not apply.
      row[10] = c.algorithm->options().overrides.contains(p.name()) ? std::string("override")
                                                                    : c.algorithm->sparsity_schedule().describe();
      row[11] = describe_update(s.config.sparsity.groups.at(c.group - 1));
    }
    rows.push_back(std::move(row));
  }
  fmt::print("per-parameter plan at step 0 (level: the target level; sparsity: of the initial mask):\n");
  print_table(rows);
  if (sparse_count == 0) {
    fmt::print("counts: {} parameters, all dense\n", total);
    return;
  }
  fmt::print(
      "counts: {} parameters when dense, {} kept when sparse; sparsity {:.4f} of the {} sparsified parameter{}, "
      "{:.4f} of the whole model\n",
      total, kept, sparsity_of(sparse_kept, sparse_total), sparse_count, sparse_count == 1 ? "" : "s",
      sparsity_of(kept, total));
}

}  // namespace

int run_config_command(const ConfigCommandOptions& options) {
  std::variant<TrainConfig, SparsityConfig> loaded = load_train_or_sparsity_file(options.params);
  if (const auto* sparsity = std::get_if<SparsityConfig>(&loaded)) {
    print_sparsity(options.params, *sparsity);
    fmt::print("{}: no model section; the per-parameter plan needs a whole training config (docs/training.md)\n",
               options.params);
    return 0;
  }
  // Built before anything is printed: an error applying the algorithm leaves stdout empty.
  TrainConfig& config = std::get<TrainConfig>(loaded);
  const uint64_t seed = config.run.seed;
  const Setup setup = make_setup(std::move(config), seed, /*load_data=*/false);
  print_sparsity(options.params, setup.config.sparsity);
  for (const std::string& w : setup.warnings) fmt::print(stderr, "sparsetrain: warning: {}\n", w);
  print_plan(setup);
  return 0;
}

}  // namespace sparsetrain
