#include "cli/speed_target.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "sparsetrain/core/error.h"
#include "sparsetrain/formats/format_spec.h"

namespace sparsetrain {

std::string TargetVerdict::describe() const {
  if (met()) return fmt::format("met (target >= {:.2f}x)", target);
  return fmt::format("missed: short by {:.3f}x (target >= {:.2f}x)", short_by(), target);
}

void TargetVerdict::add_to(nlohmann::json& j) const {
  j["target_speedup"] = target;
  j["target_met"] = met();
  j["target_short_by"] = short_by();
}

std::optional<double> speedup_of(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value <= 0.0) return std::nullopt;
  return value;
}

std::map<std::string, double> parse_format_targets(const std::vector<std::string>& items,
                                                   const std::vector<std::string>& formats) {
  const std::string option = "bench linear --target";
  std::map<std::string, double> targets;
  for (const std::string& item : items) {
    const auto eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0) fail("{}: '{}' is not FORMAT=SPEEDUP, e.g. csr=4 or 2:4=1.3", option, item);
    const std::string name = FormatSpec::parse(item.substr(0, eq), option).name();
    if (std::find(formats.begin(), formats.end(), name) == formats.end())
      fail("{}: '{}' names format {}, which this run does not time (--format: {})", option, item, name,
           fmt::join(formats, ", "));
    if (targets.count(name) != 0) fail("{}: format {} has two targets", option, name);
    const std::string value = item.substr(eq + 1);
    const std::optional<double> speedup = speedup_of(value);
    if (!speedup) fail("{} {}: '{}' is not a speedup; expected a number > 0, e.g. 4 or 1.3", option, item, value);
    targets[name] = *speedup;
  }
  return targets;
}

}  // namespace sparsetrain
