#include "cli/memory_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

namespace {

// Ids of the tokenizer a config names: bytes plus end-of-text, GPT-2's, or BERT's uncased.
double tokenizer_vocab(const std::string& tokenizer) {
  if (tokenizer == "gpt2") return 50257;
  if (tokenizer == "wordpiece") return 30522;
  return 257;
}

double optimizer_buffers(const OptimizerConfig& o) {
  if (o.type == "adamw") return 2;
  return o.sgd.momentum > 0 ? 1 : 0;
}

// The first number of `file`, or nullopt (no file, or a word such as cgroup v2's "max").
std::optional<uint64_t> number_in(const std::string& file) {
  std::ifstream in(file);
  uint64_t n = 0;
  if (in >> n) return n;
  return std::nullopt;
}

}  // namespace

MemoryEstimate estimate_memory(const TrainConfig& c) {
  constexpr double kFloat = 4;
  MemoryEstimate e;
  const double batch = static_cast<double>(std::max(c.train_input.batch_size, c.eval_input.batch_size));
  double activations = 0;  // floats
  if (const auto* g = std::get_if<GptConfig>(&c.model)) {
    const double vocab =
        c.model_sets_vocab ? static_cast<double>(g->vocab_size) : tokenizer_vocab(c.train_input.tokenizer);
    const double C = static_cast<double>(g->embed), L = static_cast<double>(g->layers);
    const double H = static_cast<double>(g->heads), P = static_cast<double>(g->context);
    const double T = c.train_input.sequence_length > 0 ? static_cast<double>(c.train_input.sequence_length) : P;
    e.weights = vocab * C + P * C + L * (12 * C * C + 13 * C) + 2 * C;
    activations = batch * T * (L * (16 * C + H * T) + 2 * vocab + 10 * C);
  } else if (const auto* b = std::get_if<BertConfig>(&c.model)) {
    const double vocab =
        c.model_sets_vocab ? static_cast<double>(b->vocab_size) : tokenizer_vocab(c.train_input.tokenizer);
    const double C = static_cast<double>(b->hidden), L = static_cast<double>(b->layers);
    const double I = static_cast<double>(b->intermediate), H = static_cast<double>(b->heads);
    const double P = static_cast<double>(b->max_positions);
    const double T = c.train_input.sequence_length > 0 ? static_cast<double>(c.train_input.sequence_length) : P;
    e.weights = (vocab + P + 2) * C + L * (4 * C * C + 2 * C * I + 9 * C + I) + 2 * C * C + 8 * C + vocab;
    // Per token and layer: qkv, attention, two sums, h1 and the output (3C + 5C) plus the two
    // [I] matrices and the attention probabilities; the head's logits on the masked tokens.
    activations = batch * T * (L * (8 * C + 2 * I + H * T) + 10 * C) +
                  batch * static_cast<double>(c.train_input.max_predictions_per_seq) * 2 * vocab;
  } else {
    const MlpConfig& m = std::get<MlpConfig>(c.model);
    double in = static_cast<double>(m.inputs), hidden_units = 0;
    for (const int64_t h : m.hidden) {
      e.weights += in * static_cast<double>(h) + static_cast<double>(h);
      in = static_cast<double>(h);
      hidden_units += static_cast<double>(h);
    }
    const double classes = static_cast<double>(m.classes);
    e.weights += in * classes + classes;
    activations = batch * (static_cast<double>(m.inputs) + 4 * hidden_units + 2 * classes);
  }
  e.weights *= kFloat;
  e.parameters = e.weights * (2 + optimizer_buffers(c.optimizer));
  e.activations = activations * kFloat;
  return e;
}

std::optional<AvailableMemory> available_memory() {
  std::optional<AvailableMemory> best;
  auto consider = [&](uint64_t bytes, const std::string& source) {
    if (!best || bytes < best->bytes) best = AvailableMemory{bytes, source};
  };
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    uint64_t kib = 0;
    if (line.starts_with("MemAvailable:") && std::istringstream(line.substr(13)) >> kib) {
      consider(kib * 1024, "MemAvailable in /proc/meminfo");
      break;
    }
  }
  // cgroup v2, then v1 (whose "no limit" is a number near 2^63).
  for (const auto& [limit_file, usage_file] :
       {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const std::optional<uint64_t> limit = number_in(limit_file);
    if (!limit || *limit >= (uint64_t{1} << 60)) continue;
    const uint64_t usage = number_in(usage_file).value_or(0);
    consider(*limit > usage ? *limit - usage : 0, fmt::format("the cgroup memory limit {} less its usage", limit_file));
  }
  return best;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 6) bytes /= 1024, ++unit;
  return unit == 0 ? fmt::format("{:.0f} bytes", bytes) : fmt::format("{:.1f} {}", bytes, units[unit]);
}

void check_memory(const TrainConfig& c) {
  const MemoryEstimate e = estimate_memory(c);
  const std::optional<AvailableMemory> available = available_memory();
  if (!available || e.total() <= static_cast<double>(available->bytes)) return;
  fail(
      "{}: the run needs about {} of memory ({} for the weights, their gradients and the optimizer state; {} for the "
      "activations of a batch), but {} is available ({}); make the model or the batch smaller",
      c.file, format_bytes(e.total()), format_bytes(e.parameters), format_bytes(e.activations),
      format_bytes(static_cast<double>(available->bytes)), available->source);
}

}  // namespace sparsetrain
