#pragma once
// Sparsity algorithms, after the Cerebras sparsity API: an algorithm only decides masks.
// Storage (Parameter), optimizer masking (Optimizer) and kernels are other layers' business.
//
//   SparsityAlgorithm         selects parameters (apply), gives them initial masks, and may
//                             change them after optimizer steps (update).
//   DynamicSparsityAlgorithm  updates masks on the steps of an UpdateSchedule through one
//                             function, update_mask(param, mask, sparsity, step) -> mask.
//
// Per-parameter level: the sparsity schedule gives the overall level at a step; the
// distribution (uniform, ER, ERK) and per-parameter overrides turn it into each parameter's
// level; kept counts are exact: kept_units(level, units) of the format's units.
//
// Determinism: every random choice is drawn from Philox keyed by (seed, parameter name,
// stream), so a parameter's masks depend only on its name, the seed and the step.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sparsetrain/formats/format_spec.h"
#include "sparsetrain/formats/mask.h"
#include "sparsetrain/nn/module.h"
#include "sparsetrain/sparsity/balanced.h"
#include "sparsetrain/sparsity/distribution.h"
#include "sparsetrain/sparsity/param_filter.h"
#include "sparsetrain/sparsity/schedule.h"

namespace sparsetrain {

class Optimizer;

enum class InitMethod { Random, TopK, FromZeros, Checkerboard };
InitMethod parse_init_method(const std::string& text, const std::string& source);
const char* init_method_name(InitMethod m);

// Where the CSR kernels overtake oneDNN's dense step on every layer of the benchmark grid
// (docs/benchmarks.md: 1.06-1.48x at 70%, 0.85-1.08x at 60%).
inline constexpr double kAutoCompressLevel = 0.7;

struct SparsityOptions {
  ParamFilter filter = ParamFilter::default_filter();
  InitMethod init_method = InitMethod::Random;
  // Keys the random draws with the parameter's name. Unset: the training run's seed (runconfig.seed
  // or --seed; train/setup.cpp), else 0.
  std::optional<uint64_t> seed;
  Distribution distribution = Distribution::Uniform;
  std::map<std::string, double> overrides;  // parameter name -> fixed level
  // Format of compressed parameters; none keeps them masked-dense. Non-matrix parameters and
  // shapes the format cannot hold (N:M needs the inputs to be a multiple of M) stay masked-dense.
  std::optional<FormatSpec> format;
  // Instead of `format`: compressed CSR for each matrix whose level, when its mask is first set,
  // is at least kAutoCompressLevel, masked-dense otherwise.
  bool auto_format = false;
  // `format: masked-dense` given: the choice is the user's, so no warning that it runs dense.
  bool masked_dense_chosen = false;
  // Balanced selection (Cerebras RigL's balance_out_groups / balance_in_groups, the sideband
  // out_groups / in_groups): the rows (out) or columns (in) are cut into this many equal
  // stripes and every stripe keeps the same count. At most one of the two; each must be > 0
  // (the constructor throws otherwise).
  std::optional<int> balance_out_groups;
  std::optional<int> balance_in_groups;
  // Kept count of the initial mask: false keeps int((1 - s) * units) (Cerebras 2.x, truncated);
  // true keeps units - round(s * units) with ties to even (the 1.8-1.9 sideband form: 10 units
  // at 0.25 keep 8, where 2.x keeps 7).
  bool round_half_even = false;
};

class SparsityAlgorithm {
 public:
  SparsityAlgorithm(LevelSchedule sparsity, SparsityOptions options);
  virtual ~SparsityAlgorithm() = default;

  virtual std::string name() const = 0;  // "static", "gmp", "set", "rigl", or a user's name

  // Claims every parameter that passes the filter and is neither requires_dense nor already
  // sparse, gives it its initial mask and storage. Returns how many parameters were claimed;
  // claiming none is an error (require_claimed).
  virtual int apply(Module& model);
  // Claims exactly these parameters (what Group does after matching).
  void claim(const std::vector<Module::Entry>& entries);
  // Runs update(step) after every optimizer step while autoupdate is on (Cerebras'
  // `autoupdate`); with it off, the caller runs update(step) by hand.
  void apply(Optimizer& optimizer);
  bool autoupdate = true;

  // Before the forward pass of step `step`: says which parameters need their dense gradient
  // computed (Parameter::wants_dense_grad). Only RigL asks, and only on its update steps.
  virtual void prepare_step(int64_t /*step*/) {}
  // After optimizer step `step` (1 for the first): changes masks when the algorithm says so.
  virtual void update(int64_t step) = 0;

  const std::vector<Parameter*>& parameters() const { return params_; }
  const SparsityOptions& options() const { return options_; }
  const LevelSchedule& sparsity_schedule() const { return sparsity_; }
  // Each claimed parameter's level at `step`, in parameters() order.
  std::vector<double> levels(int64_t step) const;
  // 1 - kept / elements over parameters(), the sparsity the masks hold now (0 with none).
  double measured_sparsity() const;
  // The algorithms that decide masks: a Group's members in order, or this algorithm alone. Their
  // parameters() and levels() say which algorithm claimed a parameter and at what level.
  virtual std::vector<const SparsityAlgorithm*> leaf_algorithms() const { return {this}; }
  // The level every parameter starts at (step 0); dynamic algorithms that start later keep
  // their parameters dense (all-ones masks) until their first update.
  virtual bool starts_dense() const { return false; }

  // What apply() could not store as asked, one line per parameter, e.g. "static:
  // 'fc.weight' (8x10) is stored masked-dense, not 3:7: its 10 columns are not a multiple of 7;
  // ...". The run still trains; a caller shows these to the user before it does.
  const std::vector<std::string>& storage_warnings() const { return storage_warnings_; }

  // Mask updates made so far by the algorithms that decide masks (a Group's members, summed): a
  // data-parallel run compares the ranks' masks whenever it grows.
  int64_t mask_updates() const;

  // Masks never change on a step with a non-finite gradient in a claimed parameter.
  bool grads_finite() const;

  // What a checkpoint must hold to resume bit-identically: the algorithm's name, the mask updates
  // made so far (every random draw is keyed by seed, parameter name and that count) and, for a
  // Group, its members' states. Masks themselves live in the model's state dict.
  virtual nlohmann::json state() const;
  // Restores state(); an Error names the mismatched field (another algorithm, another group shape).
  virtual void load_state(const nlohmann::json& state);

 protected:
  // Units (elements or blocks) of a claimed parameter's mask and the format deciding them: its
  // compressed format, or elements when masked-dense.
  FormatSpec unit_format(const Parameter& p) const;
  int64_t units(const Parameter& p) const;
  // Uniform noise in [0, 1) over the parameter's elements, keyed by (seed, parameter name,
  // stream), so a parameter's random choices depend on nothing else. Stream 0 is the initial mask.
  Matrix random_scores(const Parameter& p, uint64_t stream) const;
  // Element-wise |m|: the magnitude scores of weights and gradients.
  static Matrix abs_values(Matrix m);
  // Units kept at `level` out of `units`, rounded as the options say.
  int64_t kept_count(double level, int64_t units) const;
  // The stripes of balanced selection for a parameter whose units follow `f`, if the options ask
  // for it.
  std::optional<Balance> balance(const Parameter& p, const FormatSpec& f) const;
  // The step at which masks are first set (later than 0 when a dynamic algorithm starts dense).
  virtual int64_t first_mask_step() const { return 0; }

  LevelSchedule sparsity_;
  SparsityOptions options_;
  std::vector<Parameter*> params_;
  int64_t updates_done_ = 0;  // mask updates made so far (a cycling schedule's index)
  std::vector<std::string> storage_warnings_;

 private:
  Mask initial_mask(Parameter& p, double level, const FormatSpec& f) const;
  // Throws when `p`, its mask first set at `level` in units of `f`, would keep no unit at all.
  void require_kept_units(const Parameter& p, double level, const FormatSpec& f) const;
  // The compressed format of a parameter whose level is `level` when its mask is first set.
  std::optional<FormatSpec> storage_format(const Parameter& p, double level) const;
};

// A filter that claims nothing is almost always a typo, and a silently dense run is worse than
// an error: throws, naming `who`, the filter and some of the model's parameter names.
void require_claimed(const std::string& who, const ParamFilter& filter, std::size_t claimed, Module& model);

class DynamicSparsityAlgorithm : public SparsityAlgorithm {
 public:
  DynamicSparsityAlgorithm(LevelSchedule sparsity, UpdateSchedule schedule, SparsityOptions options);

  // The new mask of one parameter at an update step, given its current mask and its level.
  virtual Mask update_mask(Parameter& p, const Mask& mask, double sparsity, int64_t step) = 0;

  void update(int64_t step) override;
  // After p's mask changed from `before` at an update step: sets the values of the positions
  // that are new in it (they start at zero). The default leaves them at zero.
  virtual void init_grown(Parameter& /*p*/, const Mask& /*before*/, int64_t /*step*/) {}
  bool starts_dense() const override { return schedule_.first() > 0; }
  int64_t first_mask_step() const override { return schedule_.first(); }
  const UpdateSchedule& update_schedule() const { return schedule_; }
  int64_t updates_done() const { return updates_done_; }

 protected:
  UpdateSchedule schedule_;
};

}  // namespace sparsetrain
