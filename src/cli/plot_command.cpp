#include "cli/plot_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

#include "cli/model_dir.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/io/atomic_file.h"
#include "sparsetrain/nn/sparse_tensors.h"
#include "sparsetrain/report/checkpoint_masks.h"
#include "sparsetrain/report/line_chart.h"
#include "sparsetrain/report/mask_figure.h"
#include "sparsetrain/report/run_metrics.h"
#include "sparsetrain/report/small_multiples.h"

namespace sparsetrain {

namespace {

namespace fs = std::filesystem;

struct Run {
  std::string dir, label;
  RunMetrics metrics;
  RunMasks masks;
};

// The directory's own name: runs/a, runs/a/ and, from inside it, "." are all "a".
std::string default_label(const std::string& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().empty() ? dir : p.filename().string();
}

// `name` with every character but letters, digits, '.', '-' and '_' replaced by '_', for a file name.
std::string file_safe(const std::string& name) {
  std::string safe = name;
  for (char& c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return safe;
}

std::vector<std::string> labels_of(const PlotOptions& o) {
  if (!o.labels.empty() && o.labels.size() != o.model_dirs.size())
    fail(
        "--label is given {} times for {} --model_dir; give one label per model directory, in the same order, "
        "or none",
        o.labels.size(), o.model_dirs.size());
  std::vector<std::string> labels = o.labels;
  if (labels.empty())
    for (const std::string& dir : o.model_dirs) labels.push_back(default_label(dir));
  std::set<std::string> seen;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty()) fail("--label {}: empty; a label names the run in legends and file names", i + 1);
    if (!seen.insert(file_safe(labels[i])).second)
      fail(
          "two model directories are labelled '{}'{}; labels must differ (in file names too, where characters other "
          "than letters, digits, '.', '-' and '_' become '_')",
          labels[i], o.labels.empty() ? " after their directory names; give --label for each" : "");
  }
  return labels;
}

Run read_run(const std::string& dir, const std::string& label, const std::string& layer) {
  require_model_dir(dir);
  Run run{dir, label, read_run_metrics((fs::path(dir) / "metrics.jsonl").string()), read_run_masks(dir, layer)};
  if (run.masks.steps.empty() && !layer.empty())
    fail(
        "--layer {}: {} has no complete checkpoint (checkpoint_<step>.safetensors with its .done marker) to read "
        "masks from",
        layer, dir);
  return run;
}

bool plottable(double v, AxisScale scale) { return std::isfinite(v) && (scale == AxisScale::Linear || v > 0); }

// Points (x of a row, loss) of `rows`, in step order, leaving out what the axes cannot show.
std::vector<Point> loss_points(const std::vector<MetricRow>& rows, AxisScale x_scale,
                               const std::function<std::optional<double>(const MetricRow&)>& x_of) {
  std::vector<const MetricRow*> sorted;
  for (const MetricRow& r : rows) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const MetricRow* a, const MetricRow* b) { return a->step < b->step; });
  std::vector<Point> points;
  for (const MetricRow* r : sorted) {
    const std::optional<double> x = x_of(*r);
    if (r->loss && std::isfinite(*r->loss) && x && plottable(*x, x_scale)) points.push_back({*x, *r->loss});
  }
  return points;
}

enum class LossAxis { Step, Flops, Seconds };

Chart loss_chart(const std::vector<Run>& runs, LossAxis axis) {
  Chart chart;
  chart.y_label = "loss";
  switch (axis) {
    case LossAxis::Step:
      chart.title = "Loss against training step";
      chart.x_label = "step";
      chart.note = "solid: train loss (mean over each logging window); dashed with dots: eval loss";
      break;
    case LossAxis::Flops:
      chart.title = "Loss against training FLOPs";
      chart.x_label = "training FLOPs so far (flops_actual: what the kernels ran), log scale";
      chart.x_scale = AxisScale::Log;
      chart.note =
          "solid: train loss; dashed with dots: eval loss, at the FLOPs of the last train row at or before "
          "its step";
      break;
    case LossAxis::Seconds:
      chart.title = "Loss against training time";
      chart.x_label = "training seconds so far (the steps' wall time, from ms_per_step; no evaluations)";
      chart.note =
          "solid: train loss; dashed with dots: eval loss, at the time of the last train row at or before its "
          "step";
      break;
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& run = runs[i];
    // Eval rows carry neither FLOPs nor times: they take those of the train row at or before them.
    auto x_of = [&](const MetricRow& r, bool train) -> std::optional<double> {
      switch (axis) {
        case LossAxis::Step: return static_cast<double>(r.step);
        case LossAxis::Flops: return train ? r.flops_actual : flops_at_step(run.metrics.train, r.step);
        case LossAxis::Seconds: return seconds_at_step(run.metrics.train, r.step);
      }
      return std::nullopt;
    };
    chart.series.push_back(
        {run.label + " train",
         {series_color(i), 1.5, ""},
         false,
         loss_points(run.metrics.train, chart.x_scale, [&](const MetricRow& r) { return x_of(r, true); })});
    if (!run.metrics.eval.empty())
      chart.series.push_back(
          {run.label + " eval",
           {series_color(i), 1.5, "5,4"},
           true,
           loss_points(run.metrics.eval, chart.x_scale, [&](const MetricRow& r) { return x_of(r, false); })});
  }
  return chart;
}

Chart sparsity_figure(const Run& run) {
  Chart figure;
  figure.title = fmt::format("Sparsity per layer: {}", run.label);
  figure.x_label = "checkpoint step";
  figure.y_label = "sparsity (fraction pruned)";
  figure.note = fmt::format(
      "one panel per sparse parameter, all on the same axes; from the {} complete checkpoints, "
      "steps {} to {}",
      run.masks.steps.size(), run.masks.steps.front(), run.masks.steps.back());
  for (const LayerHistory& layer : run.masks.layers) {
    Series s{layer.name, {series_color(0), 1.5, ""}, true, {}};
    for (const auto& [step, sparsity] : layer.sparsity) s.points.push_back({static_cast<double>(step), sparsity});
    figure.series.push_back(std::move(s));
  }
  return figure;
}

std::string mask_figure(const Run& run) {
  const std::vector<LayerMask>& masks = run.masks.layer_masks;
  std::vector<MaskPanel> panels;
  for (std::size_t i = 0; i < masks.size(); ++i) {
    const LayerMask& m = masks[i];
    const int64_t total = m.rows * m.cols;
    const char* which = masks.size() == 1 ? "only" : i == 0 ? "earliest" : "newest";
    panels.push_back({fmt::format("{} checkpoint (step {})", which, m.step),
                      fmt::format("sparsity {:.4f} ({} of {} kept)", sparsity_of(m.kept, total), m.kept, total),
                      downsample_mask(m.keep, m.rows, m.cols)});
  }
  const LayerMask& newest = masks.back();
  return render_mask_figure(fmt::format("Mask of {} [{}×{}]: {}", run.masks.layer, newest.rows, newest.cols, run.label),
                            panels);
}

void write_figure(const fs::path& path, const std::string& svg) {
  write_file_atomically(path.string(), svg);
  fmt::print("wrote {}\n", path.string());
}

}  // namespace

int run_plot_command(const PlotOptions& o) {
  const std::vector<std::string> labels = labels_of(o);
  std::vector<Run> runs;
  for (std::size_t i = 0; i < o.model_dirs.size(); ++i) runs.push_back(read_run(o.model_dirs[i], labels[i], o.layer));

  create_output_directory(o.out, "--out");
  const fs::path out(o.out);
  write_figure(out / "loss_vs_step.svg", render_line_chart(loss_chart(runs, LossAxis::Step)));
  write_figure(out / "loss_vs_flops.svg", render_line_chart(loss_chart(runs, LossAxis::Flops)));
  write_figure(out / "loss_vs_seconds.svg", render_line_chart(loss_chart(runs, LossAxis::Seconds)));
  for (const Run& run : runs) {
    const std::string suffix = runs.size() == 1 ? "" : fmt::format("_{}", file_safe(run.label));
    if (run.masks.steps.empty() || run.masks.layers.empty()) {
      fmt::print(stderr, "sparsetrain: note: {}: {}; no sparsity or mask figures for it\n", run.dir,
                 run.masks.steps.empty() ? "no complete checkpoint" : "no sparse parameters in its checkpoints");
      continue;
    }
    write_figure(out / fmt::format("sparsity_per_layer{}.svg", suffix), render_small_multiples(sparsity_figure(run)));
    write_figure(out / fmt::format("mask_{}{}.svg", file_safe(run.masks.layer), suffix), mask_figure(run));
  }
  return 0;
}

}  // namespace sparsetrain
