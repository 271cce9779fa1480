#include "cli/config_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/sparsity_config.h"

namespace sparsetrain {

namespace {

std::string describe_storage(const SparsityOptions& o) {
  if (o.auto_format) return "auto (csr at levels >= 0.7, masked-dense below)";
  return o.format ? o.format->name() : "masked-dense";
}

void print_group(std::size_t index, const AlgorithmSpec& spec) {
  const SparsityOptions& o = spec.options;
  fmt::print("group {}: {}\n", index + 1, spec.algorithm);
  fmt::print("  {:<14} {}\n", "sparsity", spec.sparsity.describe());
  fmt::print("  {:<14} {}\n", "update", spec.update ? spec.update->describe() : "never (static masks)");
  if (spec.drop_fraction) fmt::print("  {:<14} {}\n", "drop_fraction", spec.drop_fraction->describe());
  fmt::print("  {:<14} {}\n", "param_filter", o.filter.describe());
  fmt::print("  {:<14} {} (seed {})\n", "init_method", init_method_name(o.init_method), o.seed);
  fmt::print("  {:<14} {}\n", "distribution", distribution_name(o.distribution));
  fmt::print("  {:<14} {}\n", "storage", describe_storage(o));
  if (o.balance_out_groups) fmt::print("  {:<14} {} output groups\n", "balanced", *o.balance_out_groups);
  if (o.balance_in_groups) fmt::print("  {:<14} {} input groups\n", "balanced", *o.balance_in_groups);
  for (const auto& [name, level] : o.overrides) fmt::print("  {:<14} {} at {}\n", "override", name, level);
  for (const auto& [key, value] : spec.extra) fmt::print("  {:<14} {}\n", key, value);
}

}  // namespace

int run_config_command(const ConfigCommandOptions& options) {
  const SparsityConfig config = load_sparsity_file(options.params);
  for (const std::string& warning : config.warnings) fmt::print(stderr, "sparsetrain: warning: {}\n", warning);
  if (config.form == ConfigForm::None) {
    fmt::print("{}: no sparsity section; every parameter stays dense\n", options.params);
    return 0;
  }
  fmt::print(
      "{}: sparsity section in the {} form, {} group{}; a parameter goes to the first group whose filter "
      "matches\n",
      options.params, config_form_name(config.form), config.groups.size(), config.groups.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < config.groups.size(); ++i) print_group(i, config.groups[i]);
  return 0;
}

}  // namespace sparsetrain
