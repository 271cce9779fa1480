#include "cli/bench_linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/speed_target.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/philox.h"
#include "sparsetrain/formats/random_mask.h"
#include "sparsetrain/formats/sparse_weight.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/kernels/peak_rate.h"
#include "sparsetrain/ops/linear.h"

namespace sparsetrain {

namespace {

struct Shape {
  int64_t in, out;
};

// Dense: forward, backward-data, backward-weights. Sparse: forward, then both backward passes in
// one call (dx holds them, dw is 0), since formats may fuse them.
struct StepTimes {
  double fwd = 0, dx = 0, dw = 0;
  double best = 0;  // fastest whole step
  double total() const { return fwd + dx + dw; }
};

using Passes = std::array<std::function<void()>, 3>;  // an empty pass is skipped

double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

std::array<double, 3> run_passes(const Passes& passes) {
  std::array<double, 3> ms{};
  for (std::size_t i = 0; i < passes.size(); ++i) {
    if (!passes[i]) continue;
    const double t0 = now_ms();
    passes[i]();
    ms[i] = now_ms() - t0;
  }
  return ms;
}

// Dense and sparse steps alternate, one warm-up each, so both see the same machine state on a
// shared, drifting VM; each pass reports its median.
std::pair<StepTimes, StepTimes> time_interleaved(int repeats, const Passes& dense, const Passes& sparse) {
  std::array<std::vector<double>, 6> samples;
  double dense_best = 1e300, sparse_best = 1e300;
  for (int i = -1; i < repeats; ++i) {
    const auto d = run_passes(dense);
    const auto s = run_passes(sparse);
    if (i < 0) continue;
    for (int p = 0; p < 3; ++p) {
      samples[p].push_back(d[p]);
      samples[3 + p].push_back(s[p]);
    }
    dense_best = std::min(dense_best, d[0] + d[1] + d[2]);
    sparse_best = std::min(sparse_best, s[0] + s[1] + s[2]);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  return {{median(samples[0]), median(samples[1]), median(samples[2]), dense_best},
          {median(samples[3]), median(samples[4]), median(samples[5]), sparse_best}};
}

void fill_uniform(Matrix& m, const Philox& rng) {
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform(i) * 2.0f - 1.0f;
}

// The operands of one layer shape and token count, shared by the dense and sparse runs. In bf16
// the dense weight's bf16 copy is made once, as the optimizer step makes it in training; the
// activations are converted inside every pass.
struct LayerData {
  Matrix x, w, dy, y, dx, dw;
  AlignedBuffer<Bf16> w16;
  Bf16Matrix x16, dy16;  // bf16: X and dY rounded, as a dense layer keeps them between its passes
  LayerData(const Shape& s, int64_t tokens, uint64_t seed)
      : x(tokens, s.in),
        w(s.out, s.in),
        dy(tokens, s.out),
        y(tokens, s.out),
        dx(tokens, s.in),
        dw(s.out, s.in),
        w16(static_cast<std::size_t>(s.out * s.in)) {
    fill_uniform(x, Philox(seed, "bench.x"));
    fill_uniform(w, Philox(seed, "bench.w"));
    fill_uniform(dy, Philox(seed, "bench.dy"));
    to_bf16(w.data(), w16.data(), w.size());
  }
  Passes dense_passes(Precision precision) {
    if (precision == Precision::Bf16) {
      const ConstBf16MatrixView wv{w16.data(), w.rows(), w.cols(), w.cols()};
      // Rounding X and dY is timed in the pass that does it in training; backward-weights reads both.
      return {[this, wv] {
                round_to_bf16(x, x16);
                dense_linear_fwd_bf16(x16.view(), wv, nullptr, y);
              },
              [this, wv] {
                round_to_bf16(dy, dy16);
                dense_linear_bwd_data_bf16(dy16.view(), wv, dx);
              },
              [this] { dense_linear_bwd_weights_bf16(dy16.view(), x16.view(), dw); }};
    }
    return {[this] { dense_linear_fwd(x, w, nullptr, y); }, [this] { dense_linear_bwd_data(dy, w, dx); },
            [this] { dense_linear_bwd_weights(dy, x, dw, nullptr); }};
  }
};

struct CaseResult {
  StepTimes dense, sparse;
  double true_sparsity;
  int64_t nnz;
};

CaseResult time_case(LayerData& data, const FormatSpec& format, const Mask& mask, Precision precision, int repeats) {
  auto w = SparseWeight::from_dense(format, data.w, mask);
  AlignedBuffer<float> dvalues(w->values().size());
  LinearWorkspace ws;
  ws.precision = precision;
  // The transposed values are gathered inside the backward pass and packing happens inside
  // forward and backward, so all are timed. The bf16 copy of the values is made once, as for the
  // dense weight: in training the optimizer writes it as it updates the values.
  if (precision == Precision::Bf16) w->refresh_bf16();
  const Passes sparse = {[&] { linear_forward(*w, nullptr, data.x, data.y, ws); },
                         [&] { linear_backward(*w, data.dy, ws, data.dx, dvalues.data(), nullptr); }, nullptr};
  auto [dense_times, sparse_times] = time_interleaved(repeats, data.dense_passes(precision), sparse);
  return {dense_times, sparse_times, w->sparsity(), w->nnz()};
}

std::vector<std::string> default_formats() { return {"csr", "bcsr4", "bcsr8", "bcsr16", "2:4"}; }

// The floor's rates, given or measured on the threads and instructions the kernels use.
struct FloorRates {
  double gflops = 0, gbs = 0;
  std::string gflops_source, gbs_source;
};

FloorRates floor_rates(const BenchLinearOptions& o) {
  FloorRates r;
  if (o.peak_gflops > 0) {
    // vdpbf16ps does two multiply-adds per float32 lane, so bf16 kernels that have it can run at
    // twice a given fp32 FMA peak; a floor at the fp32 peak would sit above what they measure.
    const bool bf16_dot = o.precision == Precision::Bf16 && effective_isa() == CpuIsa::Avx512Bf16;
    r.gflops = bf16_dot ? 2.0 * o.peak_gflops : o.peak_gflops;
    r.gflops_source = bf16_dot ? "given, doubled: bf16 dot products" : "given";
  } else {
    const PeakRate peak = measure_peak_gflops(o.precision);
    r.gflops = peak.gflops;
    r.gflops_source = "measured: " + peak.loop;
  }
  r.gbs = o.bandwidth_gbs > 0 ? o.bandwidth_gbs : measure_read_gbs();
  r.gbs_source = o.bandwidth_gbs > 0 ? "given" : "measured";
  return r;
}

}  // namespace

int run_bench_linear(const BenchLinearOptions& o) {
  if (o.threads > 0) set_num_threads(o.threads);
  if (o.repeats < 1) fail("bench linear: --repeats must be at least 1, got {}", o.repeats);
  if (o.in_features.size() != o.out_features.size())
    fail("bench linear: --in and --out must be given the same number of times ({} vs {})", o.in_features.size(),
         o.out_features.size());
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < o.in_features.size(); ++i) shapes.push_back({o.in_features[i], o.out_features[i]});
  if (shapes.empty()) shapes = {{768, 3072}, {3072, 768}, {1024, 4096}};
  std::vector<int64_t> tokens = o.tokens.empty() ? std::vector<int64_t>{256, 1024, 2048} : o.tokens;
  std::vector<double> sparsities = o.sparsities.empty() ? std::vector<double>{0.5, 0.8, 0.9, 0.95, 0.98} : o.sparsities;
  std::vector<FormatSpec> formats;
  for (const auto& f : o.formats.empty() ? default_formats() : o.formats)
    formats.push_back(FormatSpec::parse(f, "bench linear --format"));
  for (double s : sparsities)
    if (!(s >= 0.0 && s < 1.0)) fail("bench linear: --sparsity {} is outside [0, 1)", s);
  std::vector<std::string> format_names;
  for (const FormatSpec& f : formats) format_names.push_back(f.name());
  const std::map<std::string, double> targets = parse_format_targets(o.targets, format_names);

  const int threads = num_threads();
  const FloorRates floor = floor_rates(o);
  if (!o.json) {
    fmt::print(
        "sparsetrain bench linear: {}, {} threads, kernels {}, dense baseline oneDNN {} ({}); median of {} "
        "interleaved runs\n",
        precision_name(o.precision), threads, isa_name(effective_isa()),
        o.precision == Precision::Bf16 ? "bf16 matmul" : "sgemm", dense_isa(), o.repeats);
    fmt::print(
        "step = forward + backward-data + backward-weights; floor = max(FLOPs / {:.0f} GFLOP/s ({}), bytes / {:.0f} "
        "GB/s ({}))\n",
        floor.gflops, floor.gflops_source, floor.gbs, floor.gbs_source);
    fmt::print("{:>10} {:>7} {:>6} {:>6} | {:>8} {:>7} | {:>7} {:>7} {:>8} | {:>7} {:>7} {:>7}{}\n", "layer", "format",
               "sparse", "tokens", "dense ms", "GF/s", "fwd ms", "bwd ms", "step ms", "speedup", "GF/s", "floor%",
               targets.empty() ? "" : " | target");
  }
  for (const Shape& shape : shapes)
    for (int64_t t : tokens) {
      LayerData data(shape, t, o.seed);
      const double dense_flops = 3.0 * 2.0 * static_cast<double>(t * shape.in * shape.out);
      for (const FormatSpec& format : formats) {
        std::vector<double> levels = sparsities;
        if (format.kind == FormatKind::NM) levels = {format.implied_sparsity()};
        for (double s : levels) {
          const Mask mask = random_mask(format, shape.out, shape.in, s, Philox(o.seed, "bench.mask"));
          // A layer that keeps nothing would time an empty product (a config at such a level is refused).
          if (mask.nnz() == 0) {
            fmt::print(stderr,
                       "sparsetrain: note: bench linear: {} at sparsity {} keeps no weight of the {}>{} layer; "
                       "not timed\n",
                       format.name(), s, shape.in, shape.out);
            continue;
          }
          const CaseResult r = time_case(data, format, mask, o.precision, o.repeats);
          const StepTimes& dense = r.dense;
          const double dense_gflops = dense_flops / dense.total() / 1e6;
          const double flops = 3.0 * 2.0 * static_cast<double>(r.nnz) * static_cast<double>(t);
          const double useful_gflops = flops / r.sparse.total() / 1e6;
          // Each pass reads its two operands once and writes its output; the packed operands of bf16
          // take 2 bytes per value (the float32 outputs still 4).
          const double value_bytes = o.precision == Precision::Bf16 ? 2.0 : 4.0;
          const double bytes_per_value =
              format.kind == FormatKind::NM ? value_bytes + 0.25 : value_bytes + 4.0 / (format.block * format.block);
          const double bytes = 3.0 * ((value_bytes + 4.0) / 2.0 * static_cast<double>(t * (shape.in + shape.out)) +
                                      static_cast<double>(r.nnz) * bytes_per_value);
          const double floor_ms = std::max(flops / (floor.gflops * 1e6), bytes / (floor.gbs * 1e6));
          const double speedup = dense.total() / r.sparse.total();
          std::optional<TargetVerdict> verdict;
          if (const auto target = targets.find(format.name()); target != targets.end())
            verdict = TargetVerdict{target->second, speedup};
          if (o.json) {
            nlohmann::json j = {{"format", format.name()},
                                {"precision", precision_name(o.precision)},
                                {"sparsity", r.true_sparsity},
                                {"tokens", t},
                                {"in", shape.in},
                                {"out", shape.out},
                                {"threads", threads},
                                {"isa", isa_name(effective_isa())},
                                {"onednn_isa", dense_isa()},
                                {"dense_ms", dense.total()},
                                {"dense_fwd_ms", dense.fwd},
                                {"dense_dx_ms", dense.dx},
                                {"dense_dw_ms", dense.dw},
                                {"dense_gflops", dense_gflops},
                                {"dense_best_ms", dense.best},
                                {"sparse_ms", r.sparse.total()},
                                {"sparse_fwd_ms", r.sparse.fwd},
                                {"sparse_bwd_ms", r.sparse.dx},
                                {"speedup", speedup},
                                {"speedup_vs_dense_best", dense.best / r.sparse.total()},
                                {"useful_gflops", useful_gflops},
                                {"floor_ms", floor_ms},
                                {"floor_gflops", floor.gflops},
                                {"floor_gbs", floor.gbs}};
            if (verdict) verdict->add_to(j);
            fmt::print("{}\n", j.dump());
          } else {
            std::string judged;
            if (!targets.empty()) judged = " | " + (verdict ? verdict->describe() : std::string("-"));
            fmt::print(
                "{:>10} {:>7} {:>6.3f} {:>6} | {:>8.2f} {:>7.0f} | {:>7.2f} {:>7.2f} {:>8.2f} | {:>6.2f}x {:>7.0f} "
                "{:>6.0f}%{}\n",
                fmt::format("{}>{}", shape.in, shape.out), format.name(), r.true_sparsity, t, dense.total(),
                dense_gflops, r.sparse.fwd, r.sparse.dx, r.sparse.total(), speedup, useful_gflops,
                100.0 * floor_ms / r.sparse.total(), judged);
          }
          std::fflush(stdout);
        }
      }
    }
  return 0;
}

}  // namespace sparsetrain
