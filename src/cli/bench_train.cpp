#include "cli/bench_train.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/memory_check.h"
#include "cli/speed_target.h"
#include "sparsetrain/core/bf16.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/parallel.h"
#include "sparsetrain/core/profile.h"
#include "sparsetrain/kernels/dense_gemm.h"
#include "sparsetrain/kernels/dense_gemm_bf16.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/kernels/peak_rate.h"
#include "sparsetrain/train/distributed.h"
#include "sparsetrain/train/step.h"

extern char** environ;

namespace sparsetrain {

using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double peak_resident_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports kilobytes
}

// oneDNN's forward product Y [m x n] = X [m x k] W^T in the run's precision (bf16: the layer's
// product, X converted, W's bf16 copy made beforehand), median of 5 after a warm-up, in GFLOP/s.
double gemm_gflops(int64_t m, int64_t n, int64_t k, Precision precision) {
  Matrix x(m, k, 0.5f), w(n, k, 0.25f), y(m, n);
  AlignedBuffer<Bf16> w16(static_cast<std::size_t>(n * k));
  to_bf16(w.data(), w16.data(), n * k);
  Bf16Matrix x16;
  std::vector<double> ms;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = Clock::now();
    if (precision == Precision::Bf16) {
      round_to_bf16(x, x16);
      dense_linear_fwd_bf16(x16.view(), {w16.data(), n, k, k}, nullptr, y);
    } else {
      gemm(false, true, m, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n);
    }
    if (i > 0) ms.push_back(ms_since(t0));
  }
  return 2.0 * static_cast<double>(m * n * k) / median(ms) / 1e6;
}

// The precision both cases run in: --precision, else the config's.
Precision precision_of(const BenchTrainOptions& o, const TrainConfig& config) {
  return o.precision ? parse_precision(*o.precision, "--precision") : config.precision;
}

// The largest matrix parameter: the GEMM the dense rate is measured on.
const Parameter& largest_matrix(Model& model) {
  const Parameter* best = nullptr;
  for (const Parameter* p : model.parameters())
    if (p->shape().size() == 2 && (best == nullptr || p->numel() > best->numel())) best = p;
  if (best == nullptr) fail("bench train: the model has no matrix parameter");
  return *best;
}

// Milliseconds per timed step of each profiled phase, in the order first entered, then "other":
// the rest of the mean step.
json step_profile(const std::vector<double>& step_ms) {
  const auto steps = static_cast<double>(step_ms.size());
  double covered = 0.0;
  json phases = json::array();
  for (const PhaseTime& t : profile_totals()) {
    phases.push_back({t.phase, t.ms / steps});
    covered += t.ms;
  }
  double total = 0.0;
  for (double v : step_ms) total += v;
  phases.push_back({"other", std::max(0.0, total - covered) / steps});
  return phases;
}

// The phases of several profiles ([phase, ms] pairs), each once, in the order first seen.
std::vector<std::string> phases_of(const std::vector<const json*>& profiles) {
  std::vector<std::string> order;
  for (const json* profile : profiles)
    for (const json& p : *profile)
      if (std::find(order.begin(), order.end(), p[0].get<std::string>()) == order.end())
        order.push_back(p[0].get<std::string>());
  return order;
}

// Per phase, the median over the cases' reports of its ms per step.
json median_profile(const std::vector<json>& reports) {
  std::vector<const json*> profiles;
  for (const json& r : reports) profiles.push_back(&r["profile"]);
  json out = json::array();
  for (const std::string& phase : phases_of(profiles)) {
    std::vector<double> v;
    for (const json* profile : profiles)
      for (const json& p : *profile)
        if (p[0] == phase) v.push_back(p[1].get<double>());
    out.push_back({phase, median(v)});
  }
  return out;
}

// One case in this process: warm-up steps, timed steps, memory; spread over the ranks of an
// mpirun job, with what the gradient all-reduce moved and cost.
json measure_case(const BenchTrainOptions& o, const std::string& which) {
  if (which != "dense" && which != "sparse") fail("bench train: --case is dense or sparse, got '{}'", which);
  TrainConfig config = load_train_config_file(o.params);
  if (which == "dense") config.sparsity = SparsityConfig{};
  config.precision = precision_of(o, config);
  const Precision precision = config.precision;
  const uint64_t seed = o.seed.value_or(config.run.seed);
  Setup s = make_setup(std::move(config), seed, /*load_data=*/true);
  distribute(s, world());
  Batch batch;
  StepResult last;
  std::vector<double> ms, wait_ms;
  for (int i = 0; i < o.warmup + o.steps; ++i) {
    if (i == o.warmup && o.profile) {
      reset_profile();
      set_profiling(true);
    }
    const auto t0 = Clock::now();
    last = train_step(s, i + 1, batch);
    if (i >= o.warmup) {
      ms.push_back(ms_since(t0));
      wait_ms.push_back(last.reduce.wait_seconds * 1e3);
    }
  }
  set_profiling(false);
  json out = {{"case", which},
              {"ms_per_step", median(ms)},
              {"step_ms", ms},
              {"predictions_per_step", last.predictions},
              {"tokens_per_step", last.tokens},
              {"flops_dense", last.flops.dense},
              {"flops_actual", last.flops.actual},
              {"peak_mb", peak_resident_mb()},
              {"model", s.model->describe()},
              {"threads", num_threads()},
              {"ranks", s.comm().size()},
              {"precision", precision_name(precision)},
              {"isa", isa_name(effective_isa())},
              {"onednn_isa", dense_isa()}};
  if (o.profile) out["profile"] = step_profile(ms);
  if (s.reducer) {
    const ReduceStats& r = last.reduce;
    out["allreduce"] = {{"buckets", r.buckets},
                        {"bucket_cap_mb", static_cast<double>(s.reducer->bucket_bytes()) / (1 << 20)},
                        {"overlapped", s.reducer->overlaps()},
                        {"mb_per_step", r.payload_bytes / (1 << 20)},
                        {"dense_equivalent_mb", r.dense_bytes / (1 << 20)},
                        {"sparse_layers_mb", r.sparse_payload_bytes / (1 << 20)},
                        {"sparse_layers_dense_equivalent_mb", r.sparse_dense_bytes / (1 << 20)},
                        {"wait_ms", median(wait_ms)},
                        {"wait_ms_per_step", wait_ms}};
  }
  json memory = json::object();
  for (const Parameter* p : s.model->parameters()) {
    const ParameterMemory m = p->memory();
    memory[p->name()] = {m.values, m.grad, m.state};
  }
  out["memory"] = memory;
  if (s.sparsity) {
    json names = json::array();
    for (const Parameter* p : s.sparsity->parameters()) names.push_back(p->name());
    out["sparse_parameters"] = names;
  }
  if (which == "dense") {
    const Parameter& p = largest_matrix(*s.model);
    out["gemm"] = {{"m", last.tokens},
                   {"n", p.rows()},
                   {"k", p.cols()},
                   {"gflops", gemm_gflops(last.tokens, p.rows(), p.cols(), precision)}};
    const PeakRate peak = measure_peak_gflops(precision);
    out["peak"] = {{"gflops", peak.gflops}, {"loop", peak.loop}};
  }
  return out;
}

// `--case`: one case in this process, printed as one JSON line for the parent to read.
int run_case(const BenchTrainOptions& o) {
  fmt::print("{}\n", measure_case(o, o.run_case).dump());
  return 0;
}

// Runs this binary with `args` and returns the JSON line it prints; its stderr passes through.
json run_child(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) fail("bench train: cannot create a pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; spawned == 0 && (n = read(fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  if (spawned != 0) fail("bench train: cannot start /proc/self/exe (error {})", spawned);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("bench train: the {} case failed (see its message above)", args[args.size() - 1]);
  try {
    return json::parse(text);
  } catch (const json::exception&) {
    fail("bench train: the {} case printed no result", args[args.size() - 1]);
  }
}

struct Memory {
  double values = 0, grad = 0, state = 0;  // MB
  double total() const { return values + grad + state; }
};

// Training memory of the named parameters in one case's report.
Memory layers_memory(const json& report, const std::set<std::string>& names) {
  Memory m;
  for (const auto& [name, bytes] : report["memory"].items()) {
    if (names.count(name) == 0) continue;
    m.values += bytes[0].get<double>() / (1 << 20);
    m.grad += bytes[1].get<double>() / (1 << 20);
    m.state += bytes[2].get<double>() / (1 << 20);
  }
  return m;
}

// The two cases' profiles side by side, phases in the dense case's order, then the sparse case's own.
void print_profile(const json& dense, const json& sparse) {
  auto ms_of = [](const json& profile, const std::string& phase) {
    for (const json& p : profile)
      if (p[0] == phase) return p[1].get<double>();
    return 0.0;
  };
  fmt::print("\nwhere a step goes (ms per step, median over rounds):\n");
  fmt::print("{:<20} {:>9} {:>9}\n", "phase", "dense", "sparse");
  for (const std::string& phase : phases_of({&dense, &sparse}))
    fmt::print("{:<20} {:>9.1f} {:>9.1f}\n", phase, ms_of(dense, phase), ms_of(sparse, phase));
}

}  // namespace

int run_bench_train(const BenchTrainOptions& o) {
  if (o.steps < 1 || o.warmup < 0 || o.rounds < 1)
    fail("bench train: --steps and --rounds must be at least 1 and --warmup at least 0");
  set_threads_per_rank(o.threads);
  if (!o.run_case.empty()) return run_case(o);

  const TrainConfig config = load_train_config_file(o.params);
  if (config.sparsity.form == ConfigForm::None)
    fail("{}: no sparsity section, so there is no sparse case to compare with dense", o.params);
  check_memory(config);  // before starting processes that would run out of it
  const int threads = o.threads > 0 ? o.threads : config.run.num_threads > 0 ? config.run.num_threads : num_threads();
  std::vector<json> dense, sparse;
  // Under mpirun every rank runs each case in this process, the sparse one first so that the
  // process's peak memory at its end is the sparse case's own; alone, each case runs in a fresh
  // process of its own.
  if (world().size() > 1)
    for (int r = 0; r < o.rounds; ++r)
      for (const char* c : {"sparse", "dense"})
        (std::string(c) == "dense" ? dense : sparse).push_back(measure_case(o, c));
  for (int r = 0; r < o.rounds && world().size() == 1; ++r)
    for (const char* c : {"dense", "sparse"}) {
      // Each process runs with this one's ISA caps: the kernels' cap and oneDNN's ISA.
      std::vector<std::string> args = {"sparsetrain", "--max-isa", std::string(isa_name(max_isa())), "--onednn-max-isa",
                                       dense_isa()};
      args.insert(args.end(), {"bench", "train", "--params", o.params, "--steps", std::to_string(o.steps), "--warmup",
                               std::to_string(o.warmup), "--threads", std::to_string(threads)});
      if (o.seed) args.insert(args.end(), {"--seed", std::to_string(*o.seed)});
      if (o.precision) args.insert(args.end(), {"--precision", *o.precision});
      if (o.profile) args.push_back("--profile");
      args.insert(args.end(), {"--case", c});
      (std::string(c) == "dense" ? dense : sparse).push_back(run_child(args));
    }

  auto median_of = [](const std::vector<json>& reports, const char* key) {
    std::vector<double> v;
    for (const json& j : reports) v.push_back(j[key].get<double>());
    return median(v);
  };
  auto median_of_nested = [](const std::vector<json>& reports, const char* outer, const char* key) {
    std::vector<double> v;
    for (const json& j : reports) v.push_back(j[outer][key].get<double>());
    return median(v);
  };
  const json& d = dense.front();
  const json& s = sparse.front();
  const double tokens = d["tokens_per_step"].get<double>();
  const double dense_ms = median_of(dense, "ms_per_step"), sparse_ms = median_of(sparse, "ms_per_step");
  const double dense_rate = tokens / dense_ms * 1e3, sparse_rate = tokens / sparse_ms * 1e3;
  const double flops_dense = d["flops_dense"].get<double>(), flops_sparse = s["flops_actual"].get<double>();
  const double dense_model_gflops = flops_dense / dense_ms / 1e6;
  // Every rank runs its own GEMMs and peak loop at once: the job's rates are the ranks' together.
  const double gemm_rate = median_of_nested(dense, "gemm", "gflops") * world().size();
  const double peak_rate = median_of_nested(dense, "peak", "gflops") * world().size();
  // Each round's dense and sparse processes ran back to back, so their ratio shows how far the
  // machine's speed drifted between rounds.
  std::vector<double> round_speedups;
  for (int r = 0; r < o.rounds; ++r)
    round_speedups.push_back(dense[r]["ms_per_step"].get<double>() / sparse[r]["ms_per_step"].get<double>());
  const std::set<std::string> names = s["sparse_parameters"].get<std::set<std::string>>();
  const Memory dense_layers = layers_memory(d, names), sparse_layers = layers_memory(s, names);
  const char* unit = config.is_text() ? "tokens" : "samples";

  json result = {{"config", o.params},
                 {"model", d["model"]},
                 {"isa", d["isa"]},
                 {"onednn_isa", d["onednn_isa"]},
                 {"threads", d["threads"]},
                 {"ranks", world().size()},
                 {"precision", d["precision"]},
                 {"steps", o.steps},
                 {"warmup", o.warmup},
                 {"rounds", o.rounds},
                 {"predictions_per_step", d["predictions_per_step"]},
                 {"tokens_per_step", tokens},
                 {"dense_ms_per_step", dense_ms},
                 {"sparse_ms_per_step", sparse_ms},
                 {"dense_tokens_per_s", dense_rate},
                 {"sparse_tokens_per_s", sparse_rate},
                 {"speedup", dense_ms / sparse_ms},
                 {"speedup_per_round", round_speedups},
                 {"flop_limit_speedup", flops_dense / flops_sparse},
                 {"dense_flops_per_step", flops_dense},
                 {"sparse_flops_per_step", flops_sparse},
                 {"dense_model_gflops", dense_model_gflops},
                 {"gemm_gflops", gemm_rate},
                 {"gemm_shape", {d["gemm"]["m"], d["gemm"]["n"], d["gemm"]["k"]}},
                 {"dense_fraction_of_gemm", dense_model_gflops / gemm_rate},
                 {"peak_gflops", peak_rate},
                 {"peak_loop", d["peak"]["loop"]},
                 {"dense_fraction_of_peak", dense_model_gflops / peak_rate},
                 {"dense_peak_mb", median_of(dense, "peak_mb")},
                 {"sparse_peak_mb", median_of(sparse, "peak_mb")},
                 {"sparse_layer_count", names.size()},
                 {"dense_sparse_layers_mb", dense_layers.total()},
                 {"sparse_sparse_layers_mb", sparse_layers.total()},
                 {"sparse_layers_memory_ratio", sparse_layers.total() / dense_layers.total()},
                 {"sparse_layers_values_mb", sparse_layers.values},
                 {"sparse_layers_grad_mb", sparse_layers.grad},
                 {"sparse_layers_state_mb", sparse_layers.state}};
  if (d.contains("allreduce")) {
    const json &da = d["allreduce"], &sa = s["allreduce"];
    result["dense_allreduce_mb_per_step"] = da["mb_per_step"];
    result["sparse_allreduce_mb_per_step"] = sa["mb_per_step"];
    result["sparse_layers_allreduce_ratio"] =
        sa["sparse_layers_mb"].get<double>() / sa["sparse_layers_dense_equivalent_mb"].get<double>();
    result["allreduce_ratio"] = sa["mb_per_step"].get<double>() / da["mb_per_step"].get<double>();
    result["dense_comm_wait_ms"] = median_of_nested(dense, "allreduce", "wait_ms");
    result["sparse_comm_wait_ms"] = median_of_nested(sparse, "allreduce", "wait_ms");
    result["dense_allreduce"] = da;
    result["sparse_allreduce"] = sa;
  }
  std::optional<TargetVerdict> verdict;
  if (o.target) {
    verdict = TargetVerdict{*o.target, dense_ms / sparse_ms};
    verdict->add_to(result);
  }
  if (o.profile) {
    result["dense_profile"] = median_profile(dense);
    result["sparse_profile"] = median_profile(sparse);
  }
  if (o.json) {
    fmt::print("{}\n", result.dump());
    return 0;
  }
  fmt::print("sparsetrain bench train: {}\n{}; {:.0f} {} per step; {}{} thread{}; {}; kernels {}, oneDNN {}\n",
             o.params, d["model"].get<std::string>(), tokens, unit,
             world().size() > 1 ? fmt::format("{} ranks x ", world().size()) : std::string(), d["threads"].get<int>(),
             d["threads"].get<int>() == 1 ? "" : "s", d["precision"].get<std::string>(), d["isa"].get<std::string>(),
             d["onednn_isa"].get<std::string>());
  fmt::print("median of {} steps after {} warm-up, {} round{} of dense and sparse processes\n\n", o.steps, o.warmup,
             o.rounds, o.rounds == 1 ? "" : "s");
  fmt::print("{:<7} {:>9} {:>10} {:>12} {:>13} {:>9} {:>17}\n", "case", "ms/step", fmt::format("{}/s", unit),
             "GFLOP/step", "model GFLOP/s", "peak MB", "sparse layers MB");
  fmt::print("{:<7} {:>9.1f} {:>10.0f} {:>12.1f} {:>13.1f} {:>9.0f} {:>17.1f}\n", "dense", dense_ms, dense_rate,
             flops_dense / 1e9, dense_model_gflops, result["dense_peak_mb"].get<double>(), dense_layers.total());
  fmt::print("{:<7} {:>9.1f} {:>10.0f} {:>12.1f} {:>13.1f} {:>9.0f} {:>17.1f}\n\n", "sparse", sparse_ms, sparse_rate,
             flops_sparse / 1e9, flops_sparse / sparse_ms / 1e6, result["sparse_peak_mb"].get<double>(),
             sparse_layers.total());
  fmt::print("speedup {:.2f}x (FLOP limit {:.2f}x)", dense_ms / sparse_ms, flops_dense / flops_sparse);
  if (o.rounds > 1) fmt::print("; round by round {:.2f}x", fmt::join(round_speedups, "x, "));
  fmt::print("\n");
  if (verdict)
    fmt::print("target: {}; the sparse step takes {:.1f} ms, the target {:.1f} ms or less\n", verdict->describe(),
               sparse_ms, dense_ms / verdict->target);
  fmt::print(
      "dense step: {:.0f} model GFLOP/s = {:.2f} of oneDNN's GEMM rate in this run ({:.0f} GFLOP/s on {}x{}x{}{}) "
      "and {:.2f} of the multiply-add peak ({:.0f} GFLOP/s, {})\n",
      dense_model_gflops, dense_model_gflops / gemm_rate, gemm_rate, d["gemm"]["m"].get<int64_t>(),
      d["gemm"]["n"].get<int64_t>(), d["gemm"]["k"].get<int64_t>(), world().size() > 1 ? ", every rank at once" : "",
      dense_model_gflops / peak_rate, peak_rate, d["peak"]["loop"].get<std::string>());
  fmt::print(
      "sparse layers ({} tensors): weights + gradients + optimizer state {:.1f} MB sparse vs {:.1f} MB dense "
      "({:.3f}x; sparse: {:.1f} weights incl. structure, {:.1f} gradients, {:.1f} optimizer state)\n",
      names.size(), sparse_layers.total(), dense_layers.total(), sparse_layers.total() / dense_layers.total(),
      sparse_layers.values, sparse_layers.grad, sparse_layers.state);
  if (result.contains("dense_allreduce")) {
    const json &da = result["dense_allreduce"], &sa = result["sparse_allreduce"];
    fmt::print(
        "gradient all-reduce per step ({} ranks, buckets of {:.0f} MiB{}): dense {:.1f} MiB in {} buckets, sparse "
        "{:.1f} MiB in {} buckets ({:.3f}x; the sparse layers' {:.1f} MiB of kept values are {:.3f}x their dense "
        "gradients); waiting on it {:.1f} ms dense, {:.1f} ms sparse per step\n",
        world().size(), da["bucket_cap_mb"].get<double>(), da["overlapped"].get<bool>() ? ", overlapped" : "",
        da["mb_per_step"].get<double>(), da["buckets"].get<int64_t>(), sa["mb_per_step"].get<double>(),
        sa["buckets"].get<int64_t>(), result["allreduce_ratio"].get<double>(), sa["sparse_layers_mb"].get<double>(),
        result["sparse_layers_allreduce_ratio"].get<double>(), result["dense_comm_wait_ms"].get<double>(),
        result["sparse_comm_wait_ms"].get<double>());
  }
  if (o.profile) print_profile(result["dense_profile"], result["sparse_profile"]);
  return 0;
}

}  // namespace sparsetrain
