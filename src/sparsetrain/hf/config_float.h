#pragma once
// The float fields of a config.json: a float32 as the shortest decimal that reads back as it
// (1e-05, not 9.99999974737875e-06), always a JSON float (0.0, not 0), as transformers writes them.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace sparsetrain {

inline nlohmann::json hf_config_float(float v) {
  const nlohmann::json j = nlohmann::json::parse(fmt::format("{}", v));
  return j.is_number_float() ? j : nlohmann::json(j.get<double>());
}

}  // namespace sparsetrain
