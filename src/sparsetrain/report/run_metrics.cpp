#include "sparsetrain/report/run_metrics.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/core/read_file.h"

namespace sparsetrain {

namespace {

using json = nlohmann::json;

std::optional<double> number_or_null(const json& row, const char* key, const std::string& where, bool required) {
  const auto it = row.find(key);
  if (it == row.end()) {
    if (required) fail("{}: no \"{}\"; expected a number or null", where, key);
    return std::nullopt;
  }
  if (it->is_null()) return std::nullopt;
  if (!it->is_number()) fail("{}: \"{}\" is {}; expected a number or null", where, key, json_text(*it));
  return it->get<double>();
}

MetricRow parse_row(const json& row, const std::string& where, std::string& split) {
  if (!row.is_object()) fail("{}: {} is not a JSON object; expected one object per line", where, json_text(row));
  const auto step = row.find("step");
  if (step == row.end() || !step->is_number_integer() || step->get<int64_t>() < 0)
    fail("{}: \"step\" is {}; expected an integer >= 0", where, step == row.end() ? "missing" : json_text(*step));
  const auto s = row.find("split");
  if (s == row.end() || !s->is_string())
    fail("{}: \"split\" is {}; expected a string such as \"train\" or \"eval\"", where,
         s == row.end() ? "missing" : json_text(*s));
  split = s->get<std::string>();
  MetricRow r;
  r.step = step->get<int64_t>();
  if (split != "train" && split != "eval") return r;
  r.loss = number_or_null(row, "loss", where, true);
  r.flops_actual = number_or_null(row, "flops_actual", where, false);
  r.ms_per_step = number_or_null(row, "ms_per_step", where, false);
  return r;
}

}  // namespace

RunMetrics parse_run_metrics(std::string_view text, const std::string& name) {
  RunMetrics metrics;
  int64_t number = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    const bool last_unterminated = end == std::string_view::npos;
    const std::string_view line = text.substr(at, last_unterminated ? std::string_view::npos : end - at);
    at = last_unterminated ? text.size() : end + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", name, number);
    const json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded()) {
      if (last_unterminated) break;  // a run killed while writing this line
      fail("{}: not valid JSON; expected one JSON object per line", where);
    }
    std::string split;
    const MetricRow r = parse_row(row, where, split);
    if (split == "train") metrics.train.push_back(r);
    if (split == "eval") metrics.eval.push_back(r);
  }
  return metrics;
}

RunMetrics read_run_metrics(const std::string& path) { return parse_run_metrics(read_file(path), path); }

std::optional<double> flops_at_step(const std::vector<MetricRow>& train, int64_t step) {
  const MetricRow* best = nullptr;
  for (const MetricRow& r : train)
    if (r.flops_actual && r.step <= step && (best == nullptr || r.step >= best->step)) best = &r;
  if (best == nullptr) return std::nullopt;
  return best->flops_actual;
}

std::optional<double> seconds_at_step(const std::vector<MetricRow>& train, int64_t step) {
  std::vector<const MetricRow*> sorted;
  for (const MetricRow& r : train)
    if (r.step <= step) sorted.push_back(&r);
  if (sorted.empty()) return std::nullopt;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const MetricRow* a, const MetricRow* b) { return a->step < b->step; });
  double seconds = 0.0;
  int64_t previous = 0;
  for (const MetricRow* r : sorted) {
    if (!r->ms_per_step) return std::nullopt;
    seconds += *r->ms_per_step * static_cast<double>(r->step - previous) / 1000.0;
    previous = r->step;
  }
  return seconds;
}

}  // namespace sparsetrain
