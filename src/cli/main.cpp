// sparsetrain command line. Exit codes (docs/cli.md): 0 success, 1 error while running (the
// message names what was wrong), 2 invalid command line; under mpirun also 5 and 6 (the ranks
// disagree). Under mpirun rank 0 prints; an error on any rank ends the whole job (MPI_Abort).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_linear.h"
#include "cli/bench_train.h"
#include "cli/config_command.h"
#include "cli/export_command.h"
#include "cli/inspect_command.h"
#include "cli/isa_options.h"
#include "cli/plot_command.h"
#include "cli/speed_target.h"
#include "cli/train_command.h"
#include "sparsetrain/config/yaml_reader.h"
#include "sparsetrain/core/build_info.h"
#include "sparsetrain/core/cpu_model.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/core/precision.h"
#include "sparsetrain/core/verbose.h"
#include "sparsetrain/dist/rank_agreement.h"
#include "sparsetrain/kernels/dense_isa.h"

namespace {

// CLI11's PositiveNumber and NonNegativeNumber quote the whole range of double when they refuse
// a value; these say what was expected and what came.
template <typename Accept>
CLI::Validator number_check(Accept accept, std::string expected, const char* name) {
  return CLI::Validator(
      [accept, expected](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value)) return fmt::format("expected a number, got '{}'", text);
        return accept(value) ? std::string() : fmt::format("expected {}, got {}", expected, text);
      },
      name);
}
CLI::Validator at_least(double low, const char* name) {
  return number_check([low](double value) { return value >= low; }, fmt::format("at least {}", low), name);
}
const CLI::Validator kNonNegative = at_least(0, "NONNEGATIVE");
const CLI::Validator kNumber = number_check([](double) { return true; }, "", "NUMBER");
// Counts, sizes and seeds of type T: digits only and within T, so that CLI11's conversion cannot
// refuse the value in its own words ("Could not convert") nor wrap a negative seed round to 2^64 - 1.
template <typename T>
CLI::Validator whole_number(uint64_t low, const char* name) {
  const uint64_t high = std::numeric_limits<T>::max();
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < low || value > high)
          return fmt::format("expected a whole number from {} to {}, got '{}'", low, high, text);
        return std::string();
      },
      name);
}
const CLI::Validator kPositive = whole_number<int64_t>(1, "POSITIVE");
const CLI::Validator kPositiveInt = whole_number<int>(1, "POSITIVE");
const CLI::Validator kCount = whole_number<int64_t>(0, "COUNT");
const CLI::Validator kCountInt = whole_number<int>(0, "COUNT");
const CLI::Validator kSeed = whole_number<uint64_t>(0, "SEED");
const CLI::Validator kAboveZero = number_check([](double value) { return value > 0.0 && std::isfinite(value); },
                                               "a finite number above 0", "ABOVE_ZERO");
const CLI::Validator kSpeedup(
    [](std::string& text) -> std::string {
      return sparsetrain::speedup_of(text) ? std::string()
                                           : fmt::format("expected a speedup above 0, e.g. 3.5, got '{}'", text);
    },
    "SPEEDUP");
const CLI::Validator kHfDir(
    [](std::string& text) -> std::string {
      return text.starts_with("hf:") && text.size() > 3
                 ? std::string()
                 : fmt::format("expected hf:DIR, a Hugging Face model directory, got '{}'", text);
    },
    "hf:DIR");

// CLI11 option names with each long name in both spellings, so that --max_steps and --max-steps,
// --max-isa and --max_isa, are the same option ("-o,--model_dir" -> "-o,--model_dir,--model-dir").
std::string names(const std::string& given) {
  std::string all = given;
  std::istringstream in(given);
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.starts_with("--")) continue;
    std::string other = name;
    const bool underscore = name.find('_') != std::string::npos;
    std::replace(other.begin() + 2, other.end(), underscore ? '_' : '-', underscore ? '-' : '_');
    if (other != name) all += "," + other;
  }
  return all;
}

// The command that was being parsed: the deepest subcommand given.
const CLI::App* deepest_command(const CLI::App* app) {
  for (const CLI::App* sub : app->get_subcommands())
    if (sub->parsed()) return deepest_command(sub);
  return app;
}

// What CLI11 reports, or, where it met an argument it does not know, that argument with the
// closest option (or subcommand) of the command it was given to: CLI11 reports a misspelt
// option as a missing required one when the option was required (`--param` for `--params`).
// One of the options that go before every command (`globals`), given after one, says so.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e,
                                const std::vector<const CLI::Option*>& globals) {
  const CLI::App* command = deepest_command(&app);
  const std::string where = command == &app ? "" : fmt::format(" for '{}'", command->get_name());
  for (const std::string& arg : app.remaining(true)) {
    std::vector<std::string> candidates;
    if (arg.starts_with("-")) {
      const std::string name = arg.substr(0, arg.find('='));
      if (command != &app)
        for (const CLI::Option* global : globals)
          if (global->check_name(name))
            return fmt::format("'{}' goes before the command: sparsetrain {} ... {} ...", name, name,
                               command->get_parent() == &app
                                   ? command->get_name()
                                   : command->get_parent()->get_name() + " " + command->get_name());
      for (const CLI::Option* option : command->get_options())
        for (const std::string& long_name : option->get_lnames()) candidates.push_back("--" + long_name);
      return fmt::format("unknown option '{}'{}{}", name, where, sparsetrain::config::did_you_mean(name, candidates));
    }
    for (const CLI::App* sub : command->get_subcommands({})) candidates.push_back(sub->get_name());
    if (!candidates.empty())
      return fmt::format("unknown command '{}'{}{}", arg, where, sparsetrain::config::did_you_mean(arg, candidates));
    return fmt::format("unexpected argument '{}'{}", arg, where);
  }
  return e.what();
}

}  // namespace

// Ends the command with `code` after printing "sparsetrain: <message>". Under mpirun the whole job
// ends (MPI_Abort); rank 0 speaks for every rank: another rank that fails prints its message only
// when rank 0 has not ended the job within a second, as it has when the cause was common to all.
int failed(int code, const std::string& message) {
  using namespace sparsetrain;
  Communicator& ranks = world();
  if (ranks.size() == 1) {
    std::fprintf(stderr, "sparsetrain: %s\n", message.c_str());
    return code;
  }
  if (ranks.rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(1));
  std::fprintf(stderr, "sparsetrain (rank %d of %d): %s\n", ranks.rank(), ranks.size(), message.c_str());
  std::fflush(stderr);
  ranks.abort(code);
  return code;
}

int run_command(int argc, char** argv);

int main(int argc, char** argv) {
  using namespace sparsetrain;
  std::optional<DistributedRuntime> runtime;
  try {
    runtime.emplace(argc, argv);
  } catch (const Error& e) {
    return failed(1, fmt::format("error: {}", e.what()));
  }
  // Only rank 0's output reaches the user.
  if (world().rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return failed(1, "error: /dev/null");
  return run_command(argc, argv);
}

int run_command(int argc, char** argv) {
  using namespace sparsetrain;
  // A write past a file-size limit (ulimit -f) then fails with EFBIG, reported with the file's
  // name like a full disk, instead of killing the process in the middle of a checkpoint.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"sparsetrain: sparse neural network training on CPUs"};
  app.require_subcommand(0, 1);
  // Printed after the environment is checked, so a bad SPARSETRAIN_MAX_ISA is an error here too.
  bool version = false;
  std::vector<const CLI::Option*> globals;  // the options that go before every command
  globals.push_back(
      app.add_flag("--version", version, "Print the version, build flags, CPU and the ISAs that would run, and exit"));
  // Training options, both at the top level (the Model Zoo form: sparsetrain --mode train --params
  // cfg.yaml --model_dir DIR) and under the train, eval and train_and_eval subcommands.
  auto add_train_options = [](CLI::App* a, TrainCommandOptions& t, bool top_level) {
    if (top_level)
      a->add_option(names("-m,--mode"), t.mode, "train, eval or train_and_eval")
          ->check(CLI::IsMember({"train", "eval", "train_and_eval"}));
    a->add_option(names("-p,--params"), t.params, "The YAML config (default: the model directory's params.yaml)");
    a->add_option(names("-o,--model_dir"), t.model_dir,
                  "Checkpoints, metrics and the config go here (default model_dir)");
    a->add_option(names("--max_steps"), t.max_steps, "Train up to this step (overrides runconfig)")->check(kPositive);
    a->add_option(names("--eval_batches"), t.eval_batches, "Batches per evaluation (overrides eval_input)")
        ->check(kPositive);
    a->add_option(names("--checkpoint_path"), t.checkpoint_path, "Start from / evaluate this checkpoint's model file");
    a->add_option(names("--load_checkpoint_states"), t.load_checkpoint_states,
                  "all (default): resume the checkpoint's run; model: only its weights, a new run from step 0")
        ->check(CLI::IsMember({"all", "model"}));
    a->add_option(names("--init_from"), t.init_from,
                  "hf:DIR: start from a Hugging Face GPT-2 or BERT directory's weights (overrides model.init_from)")
        ->check(kHfDir);
    a->add_option(names("--seed"), t.seed, "Seed (overrides runconfig.seed)")->check(kSeed);
    a->add_option(names("--threads"), t.threads, "Threads (overrides runconfig.num_threads)")->check(kPositiveInt);
    a->add_option(names("--precision"), t.precision,
                  "fp32, or bf16 mixed precision (overrides model.mixed_precision and model.fp16_type)")
        ->check(CLI::IsMember({"fp32", "bf16"}));
    a->add_flag(names("--no-progress"), t.no_progress, "No progress bar, even on a terminal");
  };
  TrainCommandOptions top;
  const std::size_t options_before = app.get_options().size();
  add_train_options(&app, top, true);
  const std::vector<CLI::Option*> all_options = app.get_options();
  const std::vector<CLI::Option*> top_train_options(all_options.begin() + static_cast<std::ptrdiff_t>(options_before),
                                                    all_options.end());
  TrainCommandOptions by_subcommand;
  std::vector<CLI::App*> train_commands;
  for (const char* mode : {"train", "eval", "train_and_eval"}) {
    auto* sub = app.add_subcommand(mode, fmt::format("As --mode {}", mode));
    add_train_options(sub, by_subcommand, false);
    train_commands.push_back(sub);
  }

  GenerateOptions generate;
  auto* generate_command = app.add_subcommand("generate", "Sample text from a GPT checkpoint");
  generate_command->add_option(names("-o,--model_dir"), generate.model_dir,
                               "A model directory (its config, newest checkpoint)");
  generate_command->add_option(names("-p,--params"), generate.params,
                               "The config (default: the model directory's params.yaml)");
  generate_command->add_option(names("--checkpoint_path"), generate.checkpoint_path,
                               "A model file (default: the newest)");
  generate_command->add_option(names("--prompt"), generate.prompt, "Text to continue");
  generate_command->add_option(names("--tokens"), generate.tokens, "Tokens to generate")->check(kPositive);
  generate_command->add_option(names("--temperature"), generate.sampling.temperature, "0 is greedy")
      ->check(kNonNegative);
  generate_command->add_option(names("--top_k"), generate.sampling.top_k, "Sample from the k likeliest tokens (0: all)")
      ->check(kCount);
  generate_command->add_option(names("--seed"), generate.sampling.seed, "Sampling seed")->check(kSeed);
  generate_command->add_option(names("--threads"), generate.threads, "Threads (default: the config's num_threads)")
      ->check(kPositiveInt);

  InspectOptions inspect;
  auto* inspect_command = app.add_subcommand("inspect", "Print a checkpoint's tensors, masks and per-layer sparsity");
  inspect_command
      ->add_option("file", inspect.path, "A safetensors file, or a model directory (its newest complete checkpoint)")
      ->required();
  inspect_command->add_option(names("--export-nan"), inspect.export_nan,
                              "Also write it in the Cerebras NaN form to this file");
  inspect_command->add_option(names("--import-nan"), inspect.import_nan,
                              "Also write it, read as the Cerebras NaN form, with masks to this file");
  ExportOptions export_options;
  auto* export_command =
      app.add_subcommand("export", "Write a GPT or BERT checkpoint as a Hugging Face model directory");
  export_command->add_option(names("-o,--model_dir"), export_options.model_dir,
                             "A model directory (its config, newest checkpoint)");
  export_command->add_option(names("-p,--params"), export_options.params,
                             "The config (default: the model directory's params.yaml)");
  export_command->add_option(names("--checkpoint_path"), export_options.checkpoint_path,
                             "A model file (default: the newest)");
  export_command->add_option(names("--format"), export_options.format, "hf: transformers' layout (the only one)")
      ->check(CLI::IsMember({"hf"}));
  export_command->add_option(names("--out"), export_options.out, "Write the directory here (new or empty)")->required();
  PlotOptions plot;
  auto* plot_command = app.add_subcommand("plot", "SVG figures of model directories: loss curves, sparsity, masks");
  plot_command->add_option(names("-o,--model_dir"), plot.model_dirs, "A model directory (repeat to compare runs)")
      ->required();
  plot_command->add_option(names("--label"), plot.labels,
                           "A legend label per --model_dir (default: the directory names)");
  plot_command->add_option(names("--out"), plot.out, "Write the figures into this directory (created if missing)")
      ->required();
  plot_command->add_option(names("--layer"), plot.layer,
                           "The parameter whose masks to draw (default: the first sparse one by name)");
  IsaOptions isa;
  bool verbose = false;
  globals.push_back(app.add_option(names("--max-isa"), isa.max_isa,
                                   "Cap the kernel ISA: avx512_bf16, avx512, avx2 or ref (as SPARSETRAIN_MAX_ISA)"));
  globals.push_back(
      app.add_option(names("--onednn-max-isa"), isa.onednn_max_isa,
                     "Cap oneDNN's ISA: avx2, avx512_core, avx512_core_bf16, ... (as ONEDNN_MAX_CPU_ISA)"));
  globals.push_back(
      app.add_flag(names("--portable"), isa.portable,
                   "Numbers that hold on any x86-64-v3 CPU: both caps at avx2, on a build without -march=native"));
  globals.push_back(app.add_flag(names("--verbose-dispatch"), verbose,
                                 "Print which kernel implementation ran (as SPARSETRAIN_VERBOSE=dispatch)"));

  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  BenchLinearOptions linear;
  auto* bench_linear = bench->add_subcommand("linear", "Dense (oneDNN) vs sparse linear-layer training step");
  bench_linear->add_option(names("--format"), linear.formats, "Formats: csr, bcsr4, bcsr8, bcsr16, N:M (e.g. 2:4)");
  bench_linear->add_option(names("--sparsity"), linear.sparsities, "Sparsity levels in [0, 1)")->check(kNumber);
  bench_linear->add_option(names("--tokens"), linear.tokens, "Tokens per step (batch x context)")->check(kPositive);
  bench_linear->add_option(names("--in"), linear.in_features, "Input features (paired with --out)")->check(kPositive);
  bench_linear->add_option(names("--out"), linear.out_features, "Output features (paired with --in)")->check(kPositive);
  bench_linear->add_option(names("--threads"), linear.threads, "Threads (default: OpenMP's)")->check(kPositiveInt);
  bench_linear->add_option(names("--repeats"), linear.repeats, "Timed runs per case, median reported")
      ->check(kPositiveInt);
  bench_linear->add_option(names("--seed"), linear.seed, "Seed for data and masks")->check(kSeed);
  bench_linear
      ->add_option(names("--peak-gflops"), linear.peak_gflops,
                   "Multiply-add peak (GFLOP/s) for the floor column (default: measured)")
      ->check(kAboveZero);
  bench_linear
      ->add_option(names("--bandwidth-gbs"), linear.bandwidth_gbs,
                   "Memory read bandwidth (GB/s) for the floor column (default: measured)")
      ->check(kAboveZero);
  bench_linear->add_flag(names("--json"), linear.json, "One JSON object per line");
  bench_linear->add_option(names("--target"), linear.targets,
                           "FORMAT=SPEEDUP: judge each case of that format against the speedup (e.g. csr=4 2:4=1.3)");
  std::string linear_precision = "fp32";
  bench_linear
      ->add_option(names("--precision"), linear_precision,
                   "fp32, or bf16: the sparse kernels' bf16 entries against oneDNN's bf16 matmul")
      ->check(CLI::IsMember({"fp32", "bf16"}));

  BenchTrainOptions train_bench;
  auto* bench_train =
      bench->add_subcommand("train", "Training steps of a config's model, dense vs sparse: speed and memory");
  bench_train->add_option(names("-p,--params"), train_bench.params, "A YAML config with a sparsity section")
      ->required();
  bench_train->add_option(names("--steps"), train_bench.steps, "Timed steps per case (median reported)")
      ->check(kPositiveInt);
  bench_train->add_option(names("--warmup"), train_bench.warmup, "Untimed steps before them")->check(kCountInt);
  bench_train->add_option(names("--rounds"), train_bench.rounds, "Alternating dense and sparse processes per case")
      ->check(kPositiveInt);
  bench_train->add_option(names("--threads"), train_bench.threads, "Threads (default: the config's, else OpenMP's)")
      ->check(kPositiveInt);
  bench_train->add_option(names("--seed"), train_bench.seed, "Seed (default: the config's)")->check(kSeed);
  bench_train->add_flag(names("--json"), train_bench.json, "One JSON object instead of the table");
  bench_train
      ->add_option(names("--precision"), train_bench.precision,
                   "fp32 or bf16 for both cases (default: the config's model.mixed_precision)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  bench_train
      ->add_option(names("--target"), train_bench.target,
                   "Speedup of the sparse step over the dense one to judge the run against (e.g. 3.5)")
      ->check(kSpeedup);
  bench_train->add_flag(names("--profile"), train_bench.profile,
                        "Also time each phase of the step (linear layers, attention, head, optimizer, ...)");
  bench_train
      ->add_option(names("--case"), train_bench.run_case, "Run only this case here and print its JSON (dense, sparse)")
      ->group("");  // internal: how the parent starts each measured process

  ConfigCommandOptions config;
  auto* config_command =
      app.add_subcommand("config", "Validate a config and print its sparsity groups and per-parameter plan");
  config_command->add_option(names("-p,--params"), config.params, "The YAML config")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return failed(2, fmt::format("error: {}", parse_error_message(app, e, globals)));
  }
  try {
    // The Model Zoo form's options (--mode, --params, ...) before a command would be ignored by it.
    if (!app.get_subcommands().empty())
      for (const CLI::Option* option : top_train_options)
        if (option->count() > 0) {
          const std::string command = deepest_command(&app)->get_name();
          if (option->check_lname("mode"))
            throw CommandLineError(fmt::format("give --mode or the command '{}', not both", command));
          throw CommandLineError(fmt::format("'{}' goes after the command: sparsetrain {} {} ...", option->get_name(),
                                             command, option->get_name()));
        }
    apply_isa_options(isa);
    if (verbose) set_verbose_dispatch(true);
    (void)effective_isa();
    if (version) {
      const BuildInfo& build = build_info();
      fmt::print("sparsetrain {}\nbuilt with {}, {}: {}\ncpu: {}\nkernels: {} (this CPU has {})\noneDNN {}: {}\n",
                 build.version, build.compiler, build.build_type, build.flags, describe(cpu_model()),
                 isa_name(effective_isa()), isa_name(cpu_isa()), onednn_version(), dense_isa());
      return 0;
    }
    if (bench_linear->parsed()) {
      linear.precision = parse_precision(linear_precision, "--precision");
      return run_bench_linear(linear);
    }
    if (bench_train->parsed()) return run_bench_train(train_bench);
    if (config_command->parsed()) return run_config_command(config);
    if (generate_command->parsed()) return run_generate_command(generate);
    if (inspect_command->parsed()) return run_inspect_command(inspect);
    if (export_command->parsed()) return run_export_command(export_options);
    if (plot_command->parsed()) return run_plot_command(plot);
    for (std::size_t i = 0; i < train_commands.size(); ++i)
      if (train_commands[i]->parsed()) {
        by_subcommand.mode = train_commands[i]->get_name();
        return run_train_command(by_subcommand);
      }
    if (top.mode.empty())
      throw CommandLineError("give a subcommand, or --mode with --params or --model_dir (see --help)");
    return run_train_command(top);
  } catch (const CommandLineError& e) {
    return failed(2, fmt::format("error: {}", e.what()));
  } catch (const RanksDisagree& e) {
    // Every rank found it at once; rank 0 alone holds the message.
    if (*e.what() != '\0') std::fprintf(stderr, "sparsetrain: error: %s\n", e.what());
    return e.exit_code();
  } catch (const Error& e) {
    return failed(1, fmt::format("error: {}", e.what()));
  } catch (const std::bad_alloc&) {
    // What check_memory's estimate did not foresee (docs/cli.md#exit-codes).
    return failed(1,
                  "error: out of memory: an allocation failed (std::bad_alloc); make the model or the batch smaller, "
                  "or free memory");
  } catch (const std::exception& e) {
    return failed(1, fmt::format("internal error: {}", e.what()));
  }
  return 0;
}
