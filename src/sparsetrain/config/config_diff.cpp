#include "sparsetrain/config/config_diff.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <utility>

#include "sparsetrain/config/yaml_reader.h"

namespace sparsetrain {

namespace {

// Key path -> value as flow YAML, in document order.
using Flat = std::vector<std::pair<std::string, std::string>>;

void flatten(const YAML::Node& node, const std::string& path, Flat& out) {
  if (!node.IsMap() || node.size() == 0) {
    out.emplace_back(path.empty() ? "(document)" : path, config::flow_text(node));
    return;
  }
  for (const auto& entry : node) {
    const std::string key = config::flow_text(entry.first);
    flatten(entry.second, path.empty() ? key : path + "." + key, out);
  }
}

Flat flat(const std::string& text) {
  Flat out;
  try {
    flatten(YAML::Load(text), "", out);
  } catch (const YAML::Exception&) {
    out = {{"(document)", "(not YAML)"}};
  }
  return out;
}

}  // namespace

std::vector<std::string> config_differences(const std::string& before, const std::string& after) {
  const Flat a = flat(before), b = flat(after);
  std::map<std::string, std::string> old_values(a.begin(), a.end()), new_values(b.begin(), b.end());
  std::vector<std::string> lines;
  for (const auto& [key, value] : b) {
    const auto it = old_values.find(key);
    if (it == old_values.end())
      lines.push_back(fmt::format("{}: (none) -> {}", key, value));
    else if (it->second != value)
      lines.push_back(fmt::format("{}: {} -> {}", key, it->second, value));
  }
  for (const auto& [key, value] : a)
    if (!new_values.contains(key)) lines.push_back(fmt::format("{}: {} -> (none)", key, value));
  return lines;
}

}  // namespace sparsetrain
