#include "sparsetrain/sparsity/algorithm.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "sparsetrain/core/error.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/optim/optimizer.h"
#include "sparsetrain/sparsity/balanced.h"
#include "sparsetrain/sparsity/mask_select.h"

namespace sparsetrain {

namespace {

// The sideband kept count: units - round(s * units), ties to even (Python's round()).
int64_t kept_units_half_even(double level, int64_t units) {
  if (!(level >= 0.0 && level <= 1.0)) fail("kept_units: sparsity must be in [0, 1], got {}", level);
  return units - static_cast<int64_t>(std::nearbyint(level * static_cast<double>(units)));
}

}  // namespace

InitMethod parse_init_method(const std::string& text, const std::string& source) {
  for (InitMethod m : {InitMethod::Random, InitMethod::TopK, InitMethod::FromZeros, InitMethod::Checkerboard})
    if (text == init_method_name(m)) return m;
  fail("{}: unknown init_method '{}'; expected random, topk, from_zeros or checkerboard", source, text);
}

const char* init_method_name(InitMethod m) {
  switch (m) {
    case InitMethod::Random: return "random";
    case InitMethod::TopK: return "topk";
    case InitMethod::FromZeros: return "from_zeros";
    case InitMethod::Checkerboard: return "checkerboard";
  }
  return "?";
}

SparsityAlgorithm::SparsityAlgorithm(LevelSchedule sparsity, SparsityOptions options)
    : sparsity_(std::move(sparsity)), options_(std::move(options)) {
  const auto& out = options_.balance_out_groups;
  const auto& in = options_.balance_in_groups;
  if (out && in) fail("sparsity options: balance_out_groups ({}) and balance_in_groups ({}) are exclusive", *out, *in);
  if (out && *out <= 0) fail("sparsity options: balance_out_groups must be > 0, got {}", *out);
  if (in && *in <= 0) fail("sparsity options: balance_in_groups must be > 0, got {}", *in);
}

std::optional<FormatSpec> SparsityAlgorithm::storage_format(const Parameter& p, double level) const {
  if (options_.auto_format)
    return p.shape().size() == 2 && level >= kAutoCompressLevel ? std::optional(FormatSpec::csr()) : std::nullopt;
  const auto& f = options_.format;
  if (!f || p.shape().size() != 2) return std::nullopt;
  if (f->kind == FormatKind::NM && p.cols() % f->m != 0) return std::nullopt;
  return f;
}

FormatSpec SparsityAlgorithm::unit_format(const Parameter& p) const {
  return p.storage() == Storage::Compressed ? p.compressed().format() : FormatSpec::csr();
}

int64_t SparsityAlgorithm::units(const Parameter& p) const { return mask_units(unit_format(p), p.rows(), p.cols()); }

std::vector<double> SparsityAlgorithm::levels(int64_t step) const {
  std::vector<ParameterShape> shapes;
  for (const Parameter* p : params_) shapes.push_back({p->name(), p->shape()});
  return distribute_sparsity(options_.distribution, sparsity_.at(step, updates_done_), shapes, options_.overrides);
}

double SparsityAlgorithm::measured_sparsity() const {
  double kept = 0.0, total = 0.0;
  for (const Parameter* p : params_) {
    kept += static_cast<double>(p->kept());
    total += static_cast<double>(p->numel());
  }
  return total > 0.0 ? 1.0 - kept / total : 0.0;
}

Mask SparsityAlgorithm::initial_mask(Parameter& p, double level, const FormatSpec& f) const {
  const int64_t n = mask_units(f, p.rows(), p.cols());
  const int64_t keep = kept_count(level, n);
  Matrix score;
  switch (options_.init_method) {
    case InitMethod::Random:  // Cerebras: the top-k of uniform noise, here keyed by the parameter's name
      score = random_scores(p, /*stream=*/0);
      break;
    case InitMethod::TopK: score = abs_values(p.to_dense()); break;
    case InitMethod::FromZeros: return Mask::nonzero_of(p.to_dense());
    case InitMethod::Checkerboard: {
      // Kept units evenly spaced in row-major unit order: unit u is kept when the running
      // count floor(u * keep / units) steps up, which keeps exactly `keep` of them.
      const int64_t b = f.kind == FormatKind::NM ? 1 : f.block;
      const int64_t unit_cols = (p.cols() + b - 1) / b;
      score = Matrix(p.rows(), p.cols());
      for (int64_t r = 0; r < p.rows(); ++r)
        for (int64_t c = 0; c < p.cols(); ++c) {
          const int64_t u = (r / b) * unit_cols + c / b;
          score.at(r, c) = ((u + 1) * keep) / n > (u * keep) / n ? 1.0f : 0.0f;
        }
      break;
    }
  }
  if (const std::optional<Balance> b = balance(p, f))
    return select_per_stripe(*b, p.rows(), p.cols(), nullptr, [&](const Stripe& s, const Mask*) {
      return topk_mask(s.of(score), f, kept_count(level, mask_units(f, s.rows, s.cols)));
    });
  return topk_mask(score, f, keep);
}

Matrix SparsityAlgorithm::random_scores(const Parameter& p, uint64_t stream) const {
  // The "sparsity:" prefix keeps these draws apart from the weight initialization's, which is
  // keyed by the parameter name alone: with equal seeds, top-k of the same uniforms would keep
  // exactly the largest initial weights.
  const Philox rng(options_.seed.value_or(0), "sparsity:" + p.name(), stream);
  Matrix score(p.rows(), p.cols());
  for (int64_t i = 0; i < score.size(); ++i) score.data()[i] = rng.uniform(static_cast<uint64_t>(i));
  return score;
}

Matrix SparsityAlgorithm::abs_values(Matrix m) {
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = std::fabs(m.data()[i]);
  return m;
}

int64_t SparsityAlgorithm::kept_count(double level, int64_t units) const {
  return options_.round_half_even ? kept_units_half_even(level, units) : kept_units(level, units);
}

std::optional<Balance> SparsityAlgorithm::balance(const Parameter& p, const FormatSpec& f) const {
  const auto& out = options_.balance_out_groups;
  const auto& in = options_.balance_in_groups;
  if (!out && !in) return std::nullopt;
  if (f.kind == FormatKind::NM || f.block != 1)
    fail("{}: balanced groups need element-wise masks, but '{}' is stored as {}", name(), p.name(), f.name());
  return out ? Balance{StripeAxis::Rows, *out} : Balance{StripeAxis::Cols, *in};
}

int SparsityAlgorithm::apply(Module& model) {
  std::vector<Module::Entry> chosen;
  for (const Module::Entry& e : model.named_parameters())
    if (!e.requires_dense && !e.param->is_sparse() && options_.filter.matches(e)) chosen.push_back(e);
  require_claimed(name(), options_.filter, chosen.size(), model);
  claim(chosen);
  return static_cast<int>(chosen.size());
}

void require_claimed(const std::string& who, const ParamFilter& filter, std::size_t claimed, Module& model) {
  if (claimed > 0) return;
  std::vector<std::string> names;
  const std::vector<Module::Entry> entries = model.named_parameters();
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < std::min(entries.size(), kShown); ++i) names.push_back(entries[i].param->name());
  if (entries.size() > kShown) names.push_back(fmt::format("and {} more", entries.size() - kShown));
  fail(
      "{}: the filter {} matches no parameter that can be sparsified (not requires_dense, not already sparse); "
      "the model has: {}",
      who, filter.describe(), fmt::join(names, ", "));
}

void SparsityAlgorithm::require_kept_units(const Parameter& p, double level, const FormatSpec& f) const {
  if (f.kind == FormatKind::NM) return;  // n of every m, n >= 1
  const int64_t n = mask_units(f, p.rows(), p.cols());
  if (n == 0 || level >= 1.0 || kept_count(level, n) > 0) return;
  const std::string unit = f.block > 1 ? fmt::format("{}x{} blocks", f.block, f.block) : std::string("weights");
  // The highest level that still keeps one unit: kept_count rounds (1 - level) * n down (or half to even).
  double highest = 1.0 - 1.0 / static_cast<double>(n);
  while (highest > 0.0 && kept_count(highest, n) == 0) highest -= 1e-4;
  const std::string instead = f.block > 1 ? " or use smaller blocks or csr" : "";
  fail("{}: '{}' ({}) would keep 0 of its {} {} at level {:.4f}, so every weight would be zero; {}", name(), p.name(),
       fmt::join(p.shape(), "x"), n, unit, level,
       highest > 0.0
           ? fmt::format("lower its level to at most {:.4f} (1 unit kept){}", std::floor(highest * 1e4) / 1e4, instead)
           : fmt::format("leave it out of the group's filter{}", instead));
}

void SparsityAlgorithm::claim(const std::vector<Module::Entry>& entries) {
  // Embedding and normalization parameters have no kernels to run compressed: masked-dense.
  std::set<const Parameter*> masked_only;
  for (const Module::Entry& e : entries) {
    if (e.param->is_sparse()) fail("{}: parameter '{}' is already sparse", name(), e.param->name());
    params_.push_back(e.param);
    if (e.owner != nullptr && is_embedding_or_norm(*e.owner)) masked_only.insert(e.param);
  }
  const std::vector<double> initial = levels(0), first_set = levels(first_mask_step());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    if (p.is_sparse()) continue;  // claimed by an earlier call
    const std::optional<FormatSpec> format =
        masked_only.contains(&p) ? std::nullopt : storage_format(p, first_set[i]);
    if (options_.format && !format) {
      const std::string why =
          masked_only.contains(&p) ? std::string("embedding and normalization parameters have no compressed kernels")
          : p.shape().size() != 2
              ? std::string("only matrices are stored compressed")
              : fmt::format("its {} columns (inputs) are not a multiple of {}", p.cols(), options_.format->m);
      storage_warnings_.push_back(fmt::format(
          "{}: '{}' ({}) is stored masked-dense, not {}: {}; it is masked to level {:.4f} and runs at dense speed",
          name(), p.name(), fmt::join(p.shape(), "x"), options_.format->name(), why, first_set[i]));
    }
    require_kept_units(p, first_set[i], format.value_or(FormatSpec::csr()));
    if (starts_dense() && format && format->kind == FormatKind::NM)
      fail("{}: parameter '{}' uses {} storage, which cannot be dense; start mask updates at step 0", name(), p.name(),
           format->name());
    const Mask mask = starts_dense() ? Mask(p.rows(), p.cols(), true)
                                     : initial_mask(p, initial[i], format.value_or(FormatSpec::csr()));
    p.sparsify(mask, format, mask.nnz());
  }
}

void SparsityAlgorithm::apply(Optimizer& optimizer) {
  optimizer.add_post_step_hook([this](int64_t step) {
    if (autoupdate) update(step);
  });
}

bool SparsityAlgorithm::grads_finite() const {
  for (const Parameter* p : params_) {
    for (float g : p->grad())
      if (!std::isfinite(g)) return false;
    if (p->wants_dense_grad)
      for (int64_t i = 0; i < p->dense_grad.size(); ++i)
        if (!std::isfinite(p->dense_grad.data()[i])) return false;
  }
  return true;
}

int64_t SparsityAlgorithm::mask_updates() const {
  int64_t n = 0;
  for (const SparsityAlgorithm* leaf : leaf_algorithms()) n += leaf->updates_done_;
  return n;
}

nlohmann::json SparsityAlgorithm::state() const { return {{"algorithm", name()}, {"updates_done", updates_done_}}; }

void SparsityAlgorithm::load_state(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("algorithm") || !state.contains("updates_done"))
    fail("sparsity state: expected an object with 'algorithm' and 'updates_done', got {}", state.dump());
  if (state["algorithm"] != name())
    fail("sparsity state: saved for algorithm {}, but this run's algorithm is '{}'", state["algorithm"].dump(), name());
  const nlohmann::json& done = state["updates_done"];
  if (!done.is_number_integer() || done.get<int64_t>() < 0)
    fail("sparsity state: 'updates_done' must be an integer >= 0, got {}", done.dump());
  updates_done_ = done.get<int64_t>();
}

DynamicSparsityAlgorithm::DynamicSparsityAlgorithm(LevelSchedule sparsity, UpdateSchedule schedule,
                                                   SparsityOptions options)
    : SparsityAlgorithm(std::move(sparsity), std::move(options)), schedule_(std::move(schedule)) {}

void DynamicSparsityAlgorithm::update(int64_t step) {
  if (!schedule_.fires(step) || !grads_finite()) return;
  const std::vector<double> level = levels(step);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    const Mask before = p.mask();
    p.set_mask(update_mask(p, before, level[i], step));
    init_grown(p, before, step);
  }
  ++updates_done_;
}

}  // namespace sparsetrain
