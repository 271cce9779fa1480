#include "sparsetrain/config/sparsity_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "sparsetrain/config/yaml_reader.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/read_file.h"
#include "sparsetrain/sparsity/group.h"

namespace sparsetrain {

using config::at_value;
using config::did_you_mean;
using config::Mapping;
using config::one_of;
using config::ScalarType;
using config::Source;
using config::Value;

namespace {

const char* const kLevel = "a level: a number in [0, 1], a list of numbers (cycling) or a schedule mapping with 'type'";
const char* const kSection =
    "a sparsity section: a number (static sparsity), a mapping, a list of mappings (groups) or {groups: [...]}";

// `param_name_patterns` in 2.2+ is sparsetrain's: regex selection, as the C++ API allows (Cerebras
// 2.2+ configs select by `param_filter` globs only).
const std::vector<std::string> kV22Keys = {"algorithm",
                                           "type",
                                           "sparsity",
                                           "schedule",
                                           "update",
                                           "drop_fraction",
                                           "init_method",
                                           "param_filter",
                                           "param_name_patterns",
                                           "balance_in_groups",
                                           "balance_out_groups",
                                           "format",
                                           "distribution",
                                           "seed",
                                           "overrides"};
const std::vector<std::string> kV21Keys = {
    "type",   "sparsity",     "schedule", "drop_fraction", "init_method", "param_name_patterns",
    "format", "distribution", "seed",     "overrides"};
const std::vector<std::string> kSidebandSettings = {
    "sparsity", "init_method", "seed", "out_groups", "in_groups", "dump_masks", "format", "distribution", "overrides"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "file:line:col: path", the `source` the parse_* functions of other layers prefix.
std::string where(const Value& v) { return config::located(v.source(), v.mark(), v.path()); }

bool is_number(const Value& v) {
  const ScalarType t = v.scalar_type();
  return t == ScalarType::Int || t == ScalarType::Float;
}

// ---- numbers -----------------------------------------------------------------------------------

double level_value(const Value& v, const std::string& what = "a number in [0, 1]") {
  const double x = v.as_number(what);
  if (!(x >= 0.0 && x <= 1.0)) v.expected(what);
  return x;
}

double finite_value(const Value& v) {
  const double x = v.as_number("a finite number");
  if (!std::isfinite(x)) v.expected("a finite number");
  return x;
}

double positive_value(const Value& v) {
  const double x = v.as_number("a finite number > 0");
  if (!(x > 0.0) || !std::isfinite(x)) v.expected("a finite number > 0");
  return x;
}

int64_t int_value(const Value& v, int64_t min) {
  const std::string what = fmt::format("an integer >= {}", min);
  const int64_t x = v.as_int(what);
  if (x < min) v.expected(what);
  return x;
}

// An integer after another argument: "an integer > start (100)".
int64_t int_after(const Value& v, const char* other, int64_t bound) {
  const std::string what = fmt::format("an integer > {} ({})", other, bound);
  const int64_t x = v.as_int(what);
  if (x <= bound) v.expected(what);
  return x;
}

// ---- level schedules ---------------------------------------------------------------------------

struct ScheduleType {
  const char* name;
  std::vector<std::string> required, optional;
};

const std::vector<ScheduleType>& schedule_types() {
  static const std::vector<ScheduleType> types = {
      {"constant", {"value"}, {}},
      {"linear", {"init", "slope"}, {}},
      {"exp", {"init", "gamma"}, {"final"}},
      {"power", {"init", "beta"}, {}},
      {"cosine", {"init", "half_period"}, {"minimum"}},
      {"cycling", {"values"}, {}},
      {"polynomial", {"init", "final", "begin", "end"}, {"power"}},
      {"graphcore_cosine", {"init", "total_steps"}, {"zero_steps", "phase_delay", "period"}},
  };
  return types;
}

std::string arguments_of(const ScheduleType& t) {
  std::string text = one_of(t.required, "and");
  if (!t.optional.empty()) text += fmt::format(" (optional: {})", fmt::join(t.optional, ", "));
  return text;
}

LevelSchedule read_cycling(const Value& v) {
  const std::vector<Value> items = v.items("a list of numbers in [0, 1]");
  if (items.empty()) v.fail("expected at least one level, got an empty list");
  std::vector<double> values;
  for (const Value& item : items) values.push_back(level_value(item));
  return at_value(v, [&] { return LevelSchedule::cycling(values); });
}

LevelSchedule read_schedule_mapping(const Value& v) {
  const Mapping m(v, kLevel);
  std::vector<std::string> names;
  for (const ScheduleType& t : schedule_types()) names.push_back(t.name);
  const std::optional<Value> type_value = m.get("type");
  if (!type_value) {
    if (m.has("freq") || m.has("steps"))
      v.fail(
          "expected a level schedule with 'type', got an update cadence ({freq, ...} or {steps}); in 2.2+ the cadence "
          "is 'update' and 'schedule' is an alias of 'sparsity'");
    v.fail(fmt::format("missing 'type': a schedule mapping has one of {}", one_of(names)));
  }
  const std::string type = type_value->as_string("a schedule type: " + one_of(names));
  const auto t = std::find_if(schedule_types().begin(), schedule_types().end(),
                              [&](const ScheduleType& s) { return type == s.name; });
  if (t == schedule_types().end())
    type_value->fail(
        fmt::format("unknown schedule type '{}'; expected {}{}", type, one_of(names), did_you_mean(type, names)));
  std::vector<std::string> arguments = t->required;
  arguments.insert(arguments.end(), t->optional.begin(), t->optional.end());
  std::vector<std::string> allowed = arguments;
  allowed.push_back("type");
  m.check_keys(allowed, [&](const std::string& key) {
    return fmt::format("unknown key for a {} schedule, which takes {}{}", type, arguments_of(*t),
                       did_you_mean(key, arguments));
  });
  auto arg = [&](const std::string& key) -> Value {
    if (std::optional<Value> x = m.get(key)) return *x;
    v.fail(fmt::format("missing '{}': a {} schedule takes {}", key, type, arguments_of(*t)));
  };
  auto opt_level = [&](const std::string& key, double fallback) {
    const std::optional<Value> x = m.get(key);
    return x ? level_value(*x) : fallback;
  };
  auto opt_finite = [&](const std::string& key, double fallback) {
    const std::optional<Value> x = m.get(key);
    return x ? finite_value(*x) : fallback;
  };
  return at_value(v, [&] {
    const std::string& k = type;
    if (k == "constant") return LevelSchedule::constant(level_value(arg("value")));
    if (k == "linear") return LevelSchedule::linear(level_value(arg("init")), finite_value(arg("slope")));
    if (k == "exp")
      return LevelSchedule::exp(level_value(arg("init")), finite_value(arg("gamma")), opt_level("final", 1.0));
    if (k == "power") return LevelSchedule::power(level_value(arg("init")), positive_value(arg("beta")));
    if (k == "cosine")
      return LevelSchedule::cosine(level_value(arg("init")), positive_value(arg("half_period")),
                                   opt_level("minimum", 0.0));
    if (k == "cycling") return read_cycling(arg("values"));
    if (k == "polynomial") {
      const double init = level_value(arg("init")), final_value = level_value(arg("final"));
      const int64_t begin = int_value(arg("begin"), 0);
      const int64_t end = int_after(arg("end"), "begin", begin);
      const std::optional<Value> power = m.get("power");
      return LevelSchedule::polynomial(init, final_value, begin, end, power ? positive_value(*power) : 3.0);
    }
    const double init = level_value(arg("init"));
    const std::optional<Value> zero = m.get("zero_steps");
    const int64_t zero_steps = zero ? int_value(*zero, 0) : 0;
    const int64_t total_steps = int_after(arg("total_steps"), "zero_steps", zero_steps);
    return LevelSchedule::graphcore_cosine(init, total_steps, zero_steps, opt_finite("phase_delay", 0.0),
                                           opt_finite("period", 0.5));
  });
}

LevelSchedule read_level(const Value& v) {
  if (v.is_list()) return read_cycling(v);
  if (v.is_map()) return read_schedule_mapping(v);
  if (is_number(v)) return LevelSchedule::constant(level_value(v));
  v.expected(kLevel);
}

// ---- update schedules --------------------------------------------------------------------------

UpdateSchedule read_update(const Value& v) {
  const Mapping m(v, "an update schedule: {freq, start, stop} or {steps: [...]}");
  const std::vector<std::string> every = {"freq", "start", "stop"};
  if (m.has("steps")) {
    m.check_keys({"steps"}, [&](const std::string& key) -> std::string {
      if (std::find(every.begin(), every.end(), key) != every.end())
        return "'steps' lists the update steps itself: give either steps or freq/start/stop";
      return "unknown key; an update schedule takes freq, start and stop, or steps" + did_you_mean(key, {"steps"});
    });
    const Value steps_value = *m.get("steps");
    const std::vector<Value> items = steps_value.items("a list of steps (integers >= 0)");
    if (items.empty()) steps_value.fail("expected at least one step, got an empty list");
    std::vector<int64_t> steps;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const int64_t step = int_value(items[i], 0);
      if (const auto first = std::find(steps.begin(), steps.end(), step); first != steps.end())
        items[i].fail(
            fmt::format("step {} is listed twice (also at {}[{}])", step, steps_value.path(), first - steps.begin()));
      steps.push_back(step);
    }
    return at_value(v, [&] { return UpdateSchedule::steps(steps); });
  }
  m.check_keys(every, [&](const std::string& key) {
    return "unknown key; an update schedule takes freq, start and stop, or steps" +
           did_you_mean(key, {"freq", "start", "stop", "steps"});
  });
  const std::optional<Value> freq = m.get("freq");
  if (!freq) v.fail("missing 'freq': an update schedule is {freq, start, stop} or {steps: [...]}");
  const int64_t f = int_value(*freq, 1);
  const std::optional<Value> start_value = m.get("start"), stop_value = m.get("stop");
  const int64_t start = start_value ? int_value(*start_value, 0) : 0;
  std::optional<int64_t> stop;
  if (stop_value) stop = int_after(*stop_value, "start", start);
  return at_value(v, [&] { return UpdateSchedule::every(f, start, stop); });
}

// ---- parameter filters -------------------------------------------------------------------------

std::vector<std::string> read_patterns(const Value& v, const std::string& kind, const std::string& kinds,
                                       std::vector<Value>* where_each) {
  const std::string what = fmt::format("a {} or a non-empty list of {}", kind, kinds);
  std::vector<Value> items;
  if (v.is_list()) {
    items = v.items(what);
    if (items.empty()) v.fail(fmt::format("expected {}, got an empty list", what));
  } else {
    items = {v};
  }
  std::vector<std::string> patterns;
  for (const Value& item : items) patterns.push_back(item.as_string(item.path() == v.path() ? what : "a " + kind));
  if (where_each) *where_each = items;
  return patterns;
}

ParamFilter read_globs(const Value& v) {
  const std::vector<std::string> patterns = read_patterns(v, "glob", "globs", nullptr);
  return at_value(v, [&] { return ParamFilter::globs(patterns); });
}

// Regexes are compiled one by one first, so a bad one is reported where it is written.
ParamFilter read_regexes(const Value& v, bool search) {
  std::vector<Value> items;
  const std::vector<std::string> patterns = read_patterns(v, "regex", "regexes", &items);
  for (std::size_t i = 0; i < items.size(); ++i) at_value(items[i], [&] { (void)ParamFilter::regexes({patterns[i]}); });
  return search ? ParamFilter::regex_searches(patterns) : ParamFilter::regexes(patterns);
}

// ---- options shared by every form --------------------------------------------------------------

void read_init_method(const Value& v, SparsityOptions& o, bool sideband) {
  const std::string text = v.as_string("an init method: random, topk, from_zeros or checkerboard");
  if (sideband && text == "checkerboard")
    v.fail("unknown init_method 'checkerboard' in the sideband form; expected random, topk or from_zeros");
  o.init_method = parse_init_method(text, where(v));
}

// format, distribution, seed, overrides; false for any other key.
bool read_common_option(const std::string& key, const Value& v, SparsityOptions& o) {
  if (key == "format") {
    const std::string accepted = fmt::format("auto, masked-dense, {}", FormatSpec::kNames);
    const std::string text = v.as_string("a format: " + accepted);
    o.auto_format = text == "auto";
    o.masked_dense_chosen = text == "masked-dense";
    if (text == "auto" || text == "masked-dense")
      o.format.reset();
    else
      o.format = FormatSpec::parse(text, where(v), accepted);
  } else if (key == "distribution") {
    o.distribution = parse_distribution(v.as_string("a distribution: uniform, er or erk"), where(v));
  } else if (key == "seed") {
    o.seed = static_cast<uint64_t>(int_value(v, 0));
  } else if (key == "overrides") {
    const Mapping m(v, "a mapping of parameter names to levels");
    o.overrides.clear();
    for (const Mapping::Entry& e : m.entries()) {
      // Below 1, as every algorithm's level: at 1 the parameter keeps no weight.
      const double level = level_value(e.value, "a number in [0, 1) (at 1 the parameter keeps no weight)");
      if (level >= 1.0) e.value.expected("a number in [0, 1) (at 1 the parameter keeps no weight)");
      o.overrides[e.key] = level;
    }
  } else {
    return false;
  }
  return true;
}

// A balanced-selection group count.
int group_count(const Value& v) {
  const char* what = "an integer >= 1 (a number of groups)";
  const int64_t x = v.as_int(what);
  if (x < 1 || x > std::numeric_limits<int>::max()) v.expected(what);
  return static_cast<int>(x);
}

// The balance keys: each a group count, the two exclusive (reported at the later one).
void read_balance(const Mapping::Entry& e, const Mapping::Entry* earlier_other, SparsityOptions& o, bool out) {
  if (earlier_other)
    e.key_value.fail(fmt::format("'{}' and '{}' are exclusive: balanced selection cuts either rows or columns",
                                 earlier_other->key, e.key));
  (out ? o.balance_out_groups : o.balance_in_groups) = group_count(e.value);
}

// ---- the algorithm's rules ---------------------------------------------------------------------
// The rules and their messages are the registry's (sparsity/registry.h); here they are only placed.

// A level under `algorithm`'s level rule. A Constant rule takes one number as written: a list or
// a mapping would read as a schedule, so it is refused before it is read.
LevelSchedule read_algorithm_level(const Value& v, const std::string& algorithm, const AlgorithmKeys& keys) {
  LevelSchedule level = LevelSchedule::constant(0.0);
  if (keys.level == LevelRule::Constant) {
    // Not a number, or outside [0, 1]: no level at all (LevelSchedule::constant would refuse it).
    const std::string what = level_rule_expectation(algorithm, keys.level);
    if (!is_number(v)) v.expected(what);
    const double x = v.as_number(what);
    if (!(x >= 0.0 && x <= 1.0)) v.expected(what);
    level = LevelSchedule::constant(x);
  } else {
    level = read_level(v);
  }
  if (const std::optional<std::string> violation =
          level_rule_violation(algorithm, keys, level, v.is_map() || v.is_list() ? level.describe() : v.got()))
    v.fail(*violation);
  return level;
}

// An update or drop_fraction rule's message, at the key when it is given, else at the group.
void check_key_rule(const std::optional<std::string>& violation, const Mapping::Entry* given, const Mapping& group) {
  if (!violation) return;
  if (given) given->key_value.fail(*violation);
  group.self().fail(*violation);
}

// Where a group, its filter key and its overrides are written (SparsityConfig::Source).
SparsityConfig::Source source_of(const Value& group, const Mapping::Entry* filter, const Mapping::Entry* overrides) {
  SparsityConfig::Source source{where(group), filter ? where(filter->key_value) : std::string(), {}};
  if (overrides) {
    const Mapping levels(overrides->value, "");
    for (const Mapping::Entry& e : levels.entries()) source.overrides[e.key] = where(e.key_value);
  }
  return source;
}

// Balanced selection cuts stripes of elements: refused, at the balance key, with a format whose
// units are blocks or N:M groups (the algorithm would refuse it only when applied, unlocated).
void check_balance_format(const SparsityOptions& o, const Mapping::Entry* balance) {
  if (!balance || !o.format || (o.format->kind != FormatKind::NM && o.format->block == 1)) return;
  balance->key_value.fail(fmt::format(
      "'{}' needs element-wise masks, but format '{}' keeps {}; use format csr (or auto), or drop '{}'", balance->key,
      o.format->name(),
      o.format->kind == FormatKind::NM ? fmt::format("{} of every {} weights", o.format->n, o.format->m)
                                       : fmt::format("whole {}x{} blocks", o.format->block, o.format->block),
      balance->key));
}

// The format rule's message at the `format` key, which is always given where the rule can break.
void check_format_rule(const AlgorithmSpec& spec, const Mapping::Entry* format) {
  if (const std::optional<std::string> violation = format_rule_violation(spec); violation && format)
    format->value.fail(*violation);
}

// ---- 2.0-2.1 and 2.2+ groups -------------------------------------------------------------------

enum class Form { V21, V22 };

std::string unknown_group_key(const std::string& key, Form form, const std::string& algorithm,
                              const std::vector<std::string>& allowed) {
  // Other algorithms' own key (rigl's drop_by_sign on a static group) says whose it is.
  std::vector<std::string> owners;
  for (const std::string& other : registered_algorithms()) {
    const std::optional<AlgorithmKeys> keys = algorithm_keys(other);
    if (other != algorithm && keys && std::find(keys->extra.begin(), keys->extra.end(), key) != keys->extra.end())
      owners.push_back(other);
  }
  if (!owners.empty()) return fmt::format("{} takes no '{}'; it is a key of {}", algorithm, key, one_of(owners, "and"));
  if (form == Form::V22) {
    if (key == "out_groups" || key == "in_groups")
      return fmt::format("unknown key in a 2.2+ group: '{}' is the sideband name; 2.2+ calls it 'balance_{}'", key,
                         key);
    if (key == "groups") return "groups do not nest: 'groups' is only valid as the single key of the section";
    if (key == "params") return "unknown key: 'params' is only flattened in the items of 'groups:'";
  } else if (std::find(kV22Keys.begin(), kV22Keys.end(), key) != kV22Keys.end()) {
    return fmt::format(
        "'{}' is a 2.2+ key, but this section reads as the 2.0-2.1 form ('type' without 'algorithm', with "
        "'param_name_patterns' or a 'schedule: {{freq, ...}}' update cadence); write it in one form",
        key);
  }
  return fmt::format("unknown key; a {} group takes {}{}", form == Form::V22 ? "2.2+" : "2.0-2.1", one_of(allowed),
                     did_you_mean(key, allowed));
}

// One group; nullopt when `sparsity: null` switches sparsity off (not allowed in a list).
std::optional<AlgorithmSpec> read_group(const Mapping& m, Form form, bool in_list, SparsityConfig& config) {
  AlgorithmSpec spec;
  const Mapping::Entry* algorithm = form == Form::V22 ? m.find("algorithm") : nullptr;
  const Mapping::Entry* type = m.find("type");
  if (algorithm && type) type->key_value.fail("'type' is a deprecated alias of 'algorithm'; give only one");
  const Mapping::Entry* named = algorithm ? algorithm : type;
  const std::vector<std::string> registered = registered_algorithms();
  if (named) {
    spec.algorithm = lower(named->value.as_string("an algorithm name: " + one_of(registered)));
    if (spec.algorithm == "group") named->value.fail("groups do not nest: 'group' cannot be the algorithm of a group");
    if (spec.algorithm == "sideband")
      named->value.fail("'type: sideband' is the 1.8-1.9 form of a whole section; it cannot be one group of a list");
    if (form == Form::V22 && !algorithm)
      config.warnings.push_back(config::located(type->key_value.source(), type->key_value.mark(),
                                                type->key_value.path() + ": 'type' is deprecated; use 'algorithm'"));
  }
  const std::optional<AlgorithmKeys> keys = algorithm_keys(spec.algorithm);
  if (!keys) named->value.fail(unknown_algorithm_message(spec.algorithm) + did_you_mean(spec.algorithm, registered));
  const std::string& name = spec.algorithm;

  std::vector<std::string> allowed = form == Form::V22 ? kV22Keys : kV21Keys;
  allowed.insert(allowed.end(), keys->extra.begin(), keys->extra.end());
  m.check_keys(allowed, [&](const std::string& key) { return unknown_group_key(key, form, name, allowed); });

  // The level: `sparsity`, or in 2.2+ its alias `schedule`.
  const Mapping::Entry* level_entry = m.find("sparsity");
  if (form == Form::V22) {
    const Mapping::Entry* alias = m.find("schedule");
    if (level_entry && alias) alias->key_value.fail("'schedule' is an alias of 'sparsity'; give only one");
    if (!level_entry) level_entry = alias;
    if (!level_entry) m.self().fail("missing 'sparsity' (or its alias 'schedule')");
  } else if (!level_entry) {
    m.self().fail("missing 'sparsity'");
  }
  const Value& level = level_entry->value;
  // `sparsity: null` switches sparsity off (Cerebras returns no algorithm). The other keys are
  // still read and checked, but not against the algorithm's rules, and nothing is built.
  const bool off = level.is_null();
  if (off && in_list) level.fail("a group of a list cannot switch sparsity off (null); remove the group");
  if (off)
    config.warnings.push_back(
        config::located(level.source(), level.mark(), level.path() + ": null: this section configures no sparsity"));
  if (!off) spec.sparsity = read_algorithm_level(level, name, *keys);

  // When masks change: `update` (2.2+) or `schedule` (2.0-2.1).
  const char* update_key = form == Form::V22 ? "update" : "schedule";
  const Mapping::Entry* update = m.find(update_key);
  if (!off) check_key_rule(update_rule_violation(name, *keys, update != nullptr, update_key), update, m);
  if (update) spec.update = read_update(update->value);

  const Mapping::Entry* drop = m.find("drop_fraction");
  if (!off) check_key_rule(drop_fraction_rule_violation(name, *keys, drop != nullptr), drop, m);
  if (drop) spec.drop_fraction = read_level(drop->value);

  SparsityOptions& o = spec.options;
  const Mapping::Entry* balance_seen = nullptr;
  const Mapping::Entry* filter_seen = nullptr;
  for (const Mapping::Entry& e : m.entries()) {
    if (e.key == "param_filter" || e.key == "param_name_patterns") {
      if (filter_seen)
        e.key_value.fail(fmt::format("'{}' and '{}' both select the group's parameters (globs and regexes); give one",
                                     filter_seen->key, e.key));
      filter_seen = &e;
    }
    if (e.key == "init_method") {
      read_init_method(e.value, o, /*sideband=*/false);
    } else if (e.key == "param_filter") {
      o.filter = read_globs(e.value);
    } else if (e.key == "param_name_patterns") {
      o.filter = read_regexes(e.value, /*search=*/false);
    } else if (e.key == "balance_out_groups" || e.key == "balance_in_groups") {
      read_balance(e, balance_seen, o, e.key == "balance_out_groups");
      balance_seen = &e;
    } else if (std::find(keys->extra.begin(), keys->extra.end(), e.key) != keys->extra.end()) {
      spec.extra[e.key] = e.value.text();
    } else {
      read_common_option(e.key, e.value, o);
    }
  }
  if (off) return std::nullopt;
  check_format_rule(spec, m.find("format"));
  check_balance_format(o, balance_seen);
  config.sources.push_back(source_of(m.self(), filter_seen, m.find("overrides")));
  // Whatever else the algorithm's constructor refuses, refused here, at the group.
  at_value(m.self(), [&] { (void)make_algorithm(spec); });
  return spec;
}

// `params:` in an item of `groups:` holds the group's keys (Cerebras' config classes).
Mapping flatten_params(const Mapping& m) {
  const Mapping::Entry* params = m.find("params");
  if (!params) return m;
  const Mapping inner(params->value, "a mapping of the group's keys");
  std::vector<Mapping::Entry> entries;
  for (const Mapping::Entry& e : m.entries())
    if (e.key != "params") entries.push_back(e);
  for (const Mapping::Entry& e : inner.entries()) {
    if (const Mapping::Entry* outer = m.find(e.key))
      e.key_value.fail(fmt::format("'{}' is given both in the group (line {}) and in its 'params'", e.key,
                                   outer->key_value.mark().line + 1));
    entries.push_back(e);
  }
  return Mapping(m.self(), std::move(entries));
}

void read_group_list(const std::vector<Value>& items, bool flatten, SparsityConfig& config) {
  for (const Value& item : items) {
    if (!item.is_map())
      item.expected(item.is_list() ? "a mapping (one group; groups do not nest)" : "a mapping (one group)");
    const Mapping m(item, "a mapping (one group)");
    if (const Mapping::Entry* nested = m.find("groups"))
      nested->key_value.fail("groups do not nest: 'groups' is only valid as the single key of the section");
    config.groups.push_back(*read_group(flatten ? flatten_params(m) : m, Form::V22, /*in_list=*/true, config));
  }
}

// ---- 1.8-1.9 sideband ------------------------------------------------------------------------

void read_sideband_setting(const std::string& key, const Value& v, AlgorithmSpec& spec) {
  SparsityOptions& o = spec.options;
  if (key == "sparsity") {
    // A sideband group is static: its level is a float under static's rule.
    (void)v.as_float("a float in [0, 1) (the sideband form takes no integers: write 0.0, not 0)");
    spec.sparsity = read_algorithm_level(v, spec.algorithm, *algorithm_keys(spec.algorithm));
  } else if (key == "init_method") {
    read_init_method(v, o, /*sideband=*/true);
  } else if (key == "out_groups" || key == "in_groups") {
    (key == "out_groups" ? o.balance_out_groups : o.balance_in_groups) = group_count(v);
  } else if (key == "dump_masks") {
    if (v.as_bool("true or false"))
      v.fail("dump_masks: true is not supported; sparsetrain keeps masks in the state dict as <param>_mask");
  } else {
    read_common_option(key, v, o);
  }
}

std::string unknown_sideband_key(const std::string& key, bool in_block) {
  std::vector<std::string> allowed = kSidebandSettings;
  if (!in_block) allowed.insert(allowed.begin(), {"type", "param_name_patterns"});
  if (in_block && (key == "param_name_patterns" || key == "type"))
    return fmt::format("'{}' is a top-level key of the sideband form; a block of param_name_patterns takes {}", key,
                       one_of(kSidebandSettings));
  if (std::find(kV22Keys.begin(), kV22Keys.end(), key) != kV22Keys.end())
    return fmt::format("'{}' is not a key of the sideband form (type: sideband), which takes {}", key, one_of(allowed));
  return fmt::format("unknown key; the sideband form takes {}{}", one_of(allowed), did_you_mean(key, allowed));
}

SparsityConfig read_sideband(const Mapping& top) {
  top.check_keys(
      [] {
        std::vector<std::string> k = kSidebandSettings;
        k.insert(k.begin(), {"type", "param_name_patterns"});
        return k;
      }(),
      [](const std::string& key) { return unknown_sideband_key(key, false); });
  // Every top-level setting is checked where it is written, even when each block overrides it.
  AlgorithmSpec scratch;
  const Mapping::Entry* top_balance = nullptr;
  for (const Mapping::Entry& e : top.entries()) {
    if (e.key == "type" || e.key == "param_name_patterns") continue;
    if (e.key == "out_groups" || e.key == "in_groups") {
      if (top_balance)
        e.key_value.fail("'out_groups' and 'in_groups' are exclusive: balanced selection cuts either rows or columns");
      top_balance = &e;
    }
    read_sideband_setting(e.key, e.value, scratch);
  }

  struct Block {
    std::optional<Mapping> settings;  // a dict block's own settings
    ParamFilter filter;
    Value at;                                    // where the block is written
    const Mapping::Entry* filter_key = nullptr;  // param_name_patterns, when given
  };
  std::vector<Block> blocks;
  std::optional<Mapping> dict;  // the blocks' settings and keys point into it
  const Mapping::Entry* patterns = top.find("param_name_patterns");
  if (!patterns) {
    blocks.push_back({std::nullopt, ParamFilter::default_filter(), top.self(), nullptr});
  } else if (patterns->value.is_map()) {
    dict.emplace(patterns->value, "");
    for (const Mapping::Entry& e : dict->entries()) {
      at_value(e.key_value, [&] { (void)ParamFilter::regexes({e.key}); });
      if (!e.value.is_map())
        e.value.expected("a mapping of settings for the parameters this regex finds (sparsity, init_method, ...)");
      Mapping settings(e.value, "");
      settings.check_keys(kSidebandSettings, [](const std::string& key) { return unknown_sideband_key(key, true); });
      blocks.push_back({std::move(settings), ParamFilter::regex_searches({e.key}), e.value, &e});
    }
  } else if (patterns->value.is_list() || patterns->value.node().IsScalar()) {
    blocks.push_back({std::nullopt, read_regexes(patterns->value, /*search=*/true), top.self(), patterns});
  } else {
    patterns->value.expected("a regex, a list of regexes, or a mapping of regex to settings");
  }

  SparsityConfig config;
  config.form = ConfigForm::Sideband;
  for (const Block& b : blocks) {
    AlgorithmSpec spec;
    spec.options.filter = b.filter;
    spec.options.init_method = InitMethod::TopK;
    spec.options.round_half_even = true;
    const Mapping::Entry* balance_seen = nullptr;
    const Mapping::Entry* format = nullptr;
    const Mapping::Entry* overrides = nullptr;
    // {**top, **block}: each setting from the block when it has it, else from the top level.
    for (const std::string& key : kSidebandSettings) {
      const Mapping::Entry* e = b.settings ? b.settings->find(key) : nullptr;
      if (!e) e = top.find(key);
      if (!e) continue;
      if (key == "format") format = e;
      if (key == "overrides") overrides = e;
      if (key == "out_groups" || key == "in_groups") {
        if (balance_seen) {
          const Mapping::Entry* later = e->key_value.mark().pos > balance_seen->key_value.mark().pos ? e : balance_seen;
          later->key_value.fail(
              "'out_groups' and 'in_groups' are exclusive: balanced selection cuts either rows or columns");
        }
        balance_seen = e;
      }
      read_sideband_setting(key, e->value, spec);
    }
    if (!(b.settings && b.settings->has("sparsity")) && !top.has("sparsity"))
      b.at.fail(b.settings ? "missing 'sparsity' (give it in this block or at the top level)" : "missing 'sparsity'");
    check_format_rule(spec, format);
    check_balance_format(spec.options, balance_seen);
    at_value(b.at, [&] { (void)make_algorithm(spec); });
    config.groups.push_back(std::move(spec));
    config.sources.push_back(source_of(b.at, b.filter_key, overrides));
  }
  return config;
}

// ---- the section -------------------------------------------------------------------------------

// 2.0-2.1: `type` without `algorithm`, and regex `param_name_patterns` or `schedule` as a cadence.
bool reads_as_v21(const Mapping& m) {
  if (m.has("algorithm") || !m.has("type")) return false;
  if (m.has("param_name_patterns")) return true;
  const std::optional<Value> schedule = m.get("schedule");
  if (!schedule || !schedule->is_map()) return false;
  const Mapping s(*schedule, "");
  return !s.has("type") && (s.has("freq") || s.has("steps"));
}

SparsityConfig read_section(const Value& v) {
  SparsityConfig config;
  if (v.is_null()) return config;
  if (is_number(v)) {
    // A bare number: static sparsity at that level over the default filter.
    AlgorithmSpec spec;
    spec.sparsity = read_algorithm_level(v, spec.algorithm, *algorithm_keys(spec.algorithm));
    config.form = ConfigForm::V22;
    config.groups.push_back(std::move(spec));
    config.sources.push_back({where(v), "", {}});
    return config;
  }
  if (v.is_list()) {
    config.form = ConfigForm::V22;
    read_group_list(v.items(kSection), /*flatten=*/false, config);
    return config;
  }
  const Mapping m(v, kSection);
  if (const std::optional<Value> groups = m.get("groups")) {
    m.check_keys({"groups"}, [](const std::string&) {
      return std::string("unknown key next to 'groups': a {groups: [...]} section has no other key");
    });
    config.form = ConfigForm::V22;
    if (groups->is_map()) {
      const Mapping g(*groups, "");
      if (std::optional<AlgorithmSpec> spec = read_group(flatten_params(g), Form::V22, false, config))
        config.groups.push_back(std::move(*spec));
    } else {
      read_group_list(groups->items("a list of groups (mappings)"), /*flatten=*/true, config);
    }
    return config;
  }
  const std::optional<Value> type = m.get("type");
  if (type && type->scalar_type() == ScalarType::String && lower(type->node().Scalar()) == "sideband")
    return read_sideband(m);
  const Form form = reads_as_v21(m) ? Form::V21 : Form::V22;
  config.form = form == Form::V21 ? ConfigForm::V21 : ConfigForm::V22;
  if (std::optional<AlgorithmSpec> spec = read_group(m, form, /*in_list=*/false, config))
    config.groups.push_back(std::move(*spec));
  return config;
}

// The value of `key` in a mapping node, with the key's mark; a repeated key is an error.
struct Found {
  YAML::Node node;
  YAML::Mark key_mark;
};

std::optional<Found> find_unique(const Source& src, const YAML::Node& map, const std::string& key,
                                 const std::string& path) {
  std::optional<Found> found;
  if (!map.IsMap()) return found;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar() != key) continue;
    if (found)
      throw Error(config::located(src, it->first.Mark(),
                                  fmt::format("{}: duplicate key (first at line {}, column {})", path,
                                              found->key_mark.line + 1, found->key_mark.column + 1)));
    found = Found{it->second, it->first.Mark()};
  }
  return found;
}

SparsityConfig read_document(const Source& src) {
  const config::Documents documents = config::load_documents(src);
  if (documents.count == 0 || documents.first.IsNull()) return {};
  if (documents.count > 1)
    throw Error(
        config::located(src, documents.second, fmt::format("expected one YAML document, found {}", documents.count)));
  const YAML::Node& root = documents.first;
  if (!root.IsMap()) {
    const Value r(root, "", src, root.Mark());
    throw Error(config::located(
        src, root.Mark(), fmt::format("expected a mapping at the top level (a training config), got {}", r.got())));
  }
  const std::optional<Found> top = find_unique(src, root, "sparsity", "sparsity");
  std::optional<Found> nested;
  if (const std::optional<Found> trainer = find_unique(src, root, "trainer", "trainer"))
    if (const std::optional<Found> init = find_unique(src, trainer->node, "init", "trainer.init"))
      nested = find_unique(src, init->node, "sparsity", "trainer.init.sparsity");
  if (top && nested)
    throw Error(config::located(
        src, nested->key_mark,
        fmt::format("trainer.init.sparsity: the section is also given at the top level (line {}); keep one (top level "
                    "up to 2.3, trainer.init from 2.4)",
                    top->key_mark.line + 1)));
  const std::optional<Found>& found = top ? top : nested;
  if (!found) return {};
  const YAML::Mark mark = found->node.IsNull() ? found->key_mark : found->node.Mark();
  try {
    return read_section(Value(found->node, top ? "sparsity" : "trainer.init.sparsity", src, mark));
  } catch (const YAML::Exception& e) {
    throw Error(config::located(src, e.mark, e.msg));
  }
}

}  // namespace

const char* config_form_name(ConfigForm form) {
  switch (form) {
    case ConfigForm::None: return "none";
    case ConfigForm::Sideband: return "sideband";
    case ConfigForm::V21: return "2.1";
    case ConfigForm::V22: return "2.2+";
  }
  return "?";
}

std::unique_ptr<SparsityAlgorithm> SparsityConfig::build() const {
  if (groups.size() == 1) return make_algorithm(groups[0]);
  auto group = std::make_unique<Group>();
  for (const AlgorithmSpec& spec : groups) group->add(make_algorithm(spec));
  return group;
}

SparsityConfig load_sparsity(const YAML::Node& node, const std::string& file, const std::string& path) {
  if (!node.IsDefined()) return {};  // e.g. root["sparsity"] of a config without one
  const Source src{file, ""};
  try {
    return read_section(Value(node, path, src, node.Mark()));
  } catch (const YAML::Exception& e) {
    throw Error(config::located(src, e.mark, e.msg));
  }
}

SparsityConfig load_sparsity_yaml(const std::string& text, const std::string& file) {
  const Source src{file, text};
  return read_document(src);
}

SparsityConfig load_sparsity_file(const std::string& path) { return load_sparsity_yaml(read_file(path), path); }

}  // namespace sparsetrain
