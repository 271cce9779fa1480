#pragma once
// Speed targets of the benchmarks (`bench linear --target`, `bench train --target`): a measured
// speedup against the one asked for, so a run says whether it met it and by how much it fell short.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sparsetrain {

struct TargetVerdict {
  double target = 0.0;    // the speedup asked for, > 0
  double achieved = 0.0;  // the speedup measured
  bool met() const { return achieved >= target; }
  // target / achieved: above 1, the factor the run fell short by.
  double short_by() const { return target / achieved; }
  // "met (target >= 4.00x)" or "missed: short by 1.180x (target >= 4.00x)".
  std::string describe() const;
  // target_speedup, target_met, target_short_by.
  void add_to(nlohmann::json& j) const;
};

// text as a speedup: the whole of it a finite number above 0, else nothing. The one rule behind
// both commands' --target (bench train's through a CLI11 validator, bench linear's per item).
std::optional<double> speedup_of(const std::string& text);

// "FORMAT=SPEEDUP" items of `bench linear --target`, keyed by the format's canonical name; each
// format must be one of `formats` (the run's canonical names) and appear once.
std::map<std::string, double> parse_format_targets(const std::vector<std::string>& items,
                                                   const std::vector<std::string>& formats);

}  // namespace sparsetrain
