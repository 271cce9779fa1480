#pragma once
// What changed between two versions of a YAML config, key by key: a resumed run whose config
// differs from the one it was trained with says so (train/trainer.cpp) and keeps both.
#include <string>
#include <vector>

namespace sparsetrain {

// One line per key path whose value differs, in the order of `after` then keys only in
// `before`, e.g. "runconfig.max_steps: 600 -> 800", "optimizer.momentum: (none) -> 0.9".
// Mappings are compared key by key; a list or scalar is one value, as flow YAML. Comments and
// layout are not changes. Text that is not YAML compares as a single value "(not YAML)".
std::vector<std::string> config_differences(const std::string& before, const std::string& after);

}  // namespace sparsetrain
