#pragma once
// The fields of a Hugging Face config.json, written and read. Written: a float32 as the shortest
// decimal that reads back as it (1e-05, not 9.99999974737875e-06), always a JSON float (0.0, not
// 0), as transformers writes them. Read: each reader names the file and the field, and shows the
// offending value bounded in length and depth (core/json_text.h), so a hostile config.json
// cannot make the message itself overflow the stack.
#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace sparsetrain {

inline nlohmann::json hf_config_float(float v) {
  const nlohmann::json j = nlohmann::json::parse(fmt::format("{}", v));
  return j.is_number_float() ? j : nlohmann::json(j.get<double>());
}

// A value of the file in a message: a string quoted, anything else as bounded JSON text.
std::string hf_shown(const nlohmann::json& v);

// `field`, which must be there: an integer >= 1.
int64_t hf_positive_int(const nlohmann::json& j, const char* field, const std::string& file);

// `field`: a number > 0; `fallback` (transformers' default) when absent.
double hf_positive_number(const nlohmann::json& j, const char* field, double fallback, const std::string& file);

// `field`: a number in [0, 1), in float32 too; `fallback` when absent.
float hf_probability(const nlohmann::json& j, const char* field, double fallback, const std::string& file);

// `field`: a layer-norm epsilon float32 holds above 0; `fallback` when absent.
float hf_layer_norm_eps(const nlohmann::json& j, const char* field, double fallback, const std::string& file);

// A boolean field whose other value describes a model that `model` (sparsetrain's GPT, ...) does
// not compute; absent means transformers' default, which is the needed value.
void hf_require_flag(const nlohmann::json& j, const char* field, bool needed, const std::string& file, const char* why,
                     const char* model);

}  // namespace sparsetrain
