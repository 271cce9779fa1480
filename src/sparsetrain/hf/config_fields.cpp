#include "sparsetrain/hf/config_fields.h"

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/json_text.h"
#include "sparsetrain/models/gpt.h"

namespace sparsetrain {

using json = nlohmann::json;

std::string hf_shown(const json& v) { return v.is_string() ? fmt::format("'{}'", v.get<std::string>()) : json_text(v); }

int64_t hf_positive_int(const json& j, const char* field, const std::string& file) {
  if (!j.contains(field)) fail("{}: missing '{}'", file, field);
  const json& v = j.at(field);
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    fail("{}: '{}' is {}; expected an integer >= 1", file, field, hf_shown(v));
  return v.get<int64_t>();
}

double hf_positive_number(const json& j, const char* field, double fallback, const std::string& file) {
  if (!j.contains(field)) return fallback;
  const json& v = j.at(field);
  if (!v.is_number() || !(v.get<double>() > 0.0))
    fail("{}: '{}' is {}; expected a number > 0", file, field, hf_shown(v));
  return v.get<double>();
}

float hf_probability(const json& j, const char* field, double fallback, const std::string& file) {
  if (!j.contains(field)) return static_cast<float>(fallback);
  const json& v = j.at(field);
  // 0.99999999 is below 1 but rounds to it in float32, which a dropout probability is computed in.
  const auto p = v.is_number() ? static_cast<float>(v.get<double>()) : -1.0f;
  if (!(p >= 0.0f && p < 1.0f)) fail("{}: '{}' is {}; expected a number in [0, 1)", file, field, hf_shown(v));
  return p;
}

// Computed in float32: a value float cannot hold (or rounds to 0) is refused, not cast.
float hf_layer_norm_eps(const json& j, const char* field, double fallback, const std::string& file) {
  const double eps = hf_positive_number(j, field, fallback, file);
  if (!(eps >= kLayerNormEpsMin && eps <= kLayerNormEpsMax))
    fail("{}: '{}' is {}; expected a number float32 holds above 0", file, field, hf_shown(j.at(field)));
  return static_cast<float>(eps);
}

void hf_require_flag(const json& j, const char* field, bool needed, const std::string& file, const char* why,
                     const char* model) {
  if (!j.contains(field)) return;
  const json& v = j.at(field);
  if (!v.is_boolean()) fail("{}: '{}' is {}; expected true or false", file, field, hf_shown(v));
  if (v.get<bool>() != needed) fail("{}: '{}' is {}: {}; {} cannot load it", file, field, hf_shown(v), why, model);
}

}  // namespace sparsetrain
