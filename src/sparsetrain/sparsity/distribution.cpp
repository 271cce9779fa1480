#include "sparsetrain/sparsity/distribution.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

Distribution parse_distribution(const std::string& text, const std::string& source) {
  if (text == "uniform") return Distribution::Uniform;
  if (text == "er") return Distribution::ER;
  if (text == "erk") return Distribution::ERK;
  fail("{}: unknown distribution '{}'; expected uniform, er or erk", source, text);
}

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::Uniform: return "uniform";
    case Distribution::ER: return "er";
    case Distribution::ERK: return "erk";
  }
  return "?";
}

namespace {

double numel(const ParameterShape& p) {
  double n = 1.0;
  for (int64_t d : p.shape) n *= static_cast<double>(d);
  return n;
}

// Unnormalized density: how much denser than average a parameter of this shape should be.
double raw_density(Distribution d, const ParameterShape& p) {
  if (d == Distribution::ER && p.shape.size() >= 2) {
    const double out = static_cast<double>(p.shape[0]), in = static_cast<double>(p.shape[1]);
    return (in + out) / (in * out);
  }
  double sum = 0.0;
  for (int64_t dim : p.shape) sum += static_cast<double>(dim);
  return sum / numel(p);
}

void check_level(double level, const std::string& what) {
  if (!(level >= 0.0 && level <= 1.0)) fail("{}: sparsity must be in [0, 1], got {}", what, level);
}

}  // namespace

std::vector<double> distribute_sparsity(Distribution d, double sparsity, const std::vector<ParameterShape>& params,
                                        const std::map<std::string, double>& overrides) {
  check_level(sparsity, std::string(distribution_name(d)) + " distribution");
  std::set<std::string> names;
  for (const ParameterShape& p : params) {
    if (!names.insert(p.name).second) fail("sparsity distribution: parameter '{}' is listed twice", p.name);
    if (p.shape.empty()) fail("sparsity distribution: parameter '{}' has no dimensions", p.name);
    for (int64_t dim : p.shape)
      if (dim <= 0) fail("sparsity distribution: parameter '{}' has a dimension of {}", p.name, dim);
  }
  for (const auto& [name, level] : overrides) {
    if (!names.contains(name))
      fail("sparsity distribution: override for '{}', which is not among the sparse parameters", name);
    check_level(level, "sparsity override for '" + name + "'");
  }

  std::vector<double> levels(params.size(), sparsity);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (auto o = overrides.find(params[i].name); o != overrides.end()) levels[i] = o->second;
  if (d == Distribution::Uniform) return levels;

  std::vector<bool> dense(params.size(), false);
  for (;;) {
    double budget = 0.0, divisor = 0.0, max_raw = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (overrides.contains(params[i].name)) continue;
      const double n = numel(params[i]);
      const double zeros = std::floor(sparsity * n);
      if (dense[i]) {
        budget -= zeros;  // keeps all n where uniform would keep n - zeros
      } else {
        budget += n - zeros;
        divisor += raw_density(d, params[i]) * n;
        max_raw = std::max(max_raw, raw_density(d, params[i]));
      }
    }
    if (divisor == 0.0) break;  // every solved parameter is dense
    const double eps = budget / divisor;
    if (max_raw * eps <= 1.0) {
      for (std::size_t i = 0; i < params.size(); ++i)
        if (!overrides.contains(params[i].name))
          levels[i] = dense[i] ? 0.0 : std::clamp(1.0 - eps * raw_density(d, params[i]), 0.0, 1.0);
      return levels;
    }
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!overrides.contains(params[i].name) && !dense[i] && raw_density(d, params[i]) == max_raw) dense[i] = true;
  }
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!overrides.contains(params[i].name)) levels[i] = 0.0;
  return levels;
}

}  // namespace sparsetrain
