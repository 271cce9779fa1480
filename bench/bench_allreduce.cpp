// bench_allreduce: all-reduce time against message size through sparsetrain's Communicator, the
// call the gradient reducer makes (float32 sum, in place), on the ranks of an mpirun job:
//
//   mpirun -np 2 --oversubscribe build/bench/bench_allreduce [--json] [--factor 2] [--max-bytes N]
//
// Sizes run from 4 B to 256 MiB (--max-bytes) by powers of 4 (--factor 2 for powers of 2). Every
// repetition starts after a barrier and times one call on each rank; the call's time is the slowest
// rank's, and the figure per size is the median over the repetitions. Each size gets about
// --budget seconds (0.8 by default) of repetitions, at least 5 and at most 2000, after warm-up
// calls. Rank 0 prints a table (bytes, median µs, algorithm bandwidth bytes / time, bus bandwidth
// 2(p-1)/p × bytes / time, the traffic per rank of a ring all-reduce, comparable across p), or one
// JSON object with --json. docs/scaling.md uses it.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sparsetrain/core/cpu_model.h"
#include "sparsetrain/dist/communicator.h"

namespace {

using Clock = std::chrono::steady_clock;
using sparsetrain::Communicator;

struct Options {
  bool json = false;
  int64_t factor = 4;
  int64_t max_bytes = int64_t{256} << 20;
  double budget_s = 0.8;
};

// A command line that cannot run: exit code 2 on every rank.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void usage(const std::string& why) {
  throw UsageError(fmt::format(
      "{}\nusage: mpirun -np N bench_allreduce [--json] [--factor 2|4] [--max-bytes N] [--budget SECONDS]", why));
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(fmt::format("{} needs a value", a));
      return argv[++i];
    };
    try {
      if (a == "--json") {
        o.json = true;
      } else if (a == "--factor") {
        o.factor = std::stoll(value());
      } else if (a == "--max-bytes") {
        o.max_bytes = std::stoll(value());
      } else if (a == "--budget") {
        o.budget_s = std::stod(value());
      } else {
        usage(fmt::format("unknown argument '{}'", a));
      }
    } catch (const std::invalid_argument&) {
      usage(fmt::format("{} needs a number", a));
    } catch (const std::out_of_range&) {
      usage(fmt::format("{} needs a number", a));
    }
  }
  if (o.factor != 2 && o.factor != 4) usage("--factor is 2 or 4");
  if (o.max_bytes < 4) usage("--max-bytes is at least 4");
  if (o.budget_s <= 0) usage("--budget is positive");
  return o;
}

uint64_t ns_since(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// One all-reduce of `values` after a barrier, in ns on this rank.
uint64_t timed_call(Communicator& comm, std::vector<float>& values) {
  comm.barrier();
  const auto t0 = Clock::now();
  comm.sum(values);
  return ns_since(t0);
}

struct Point {
  int64_t bytes;
  int64_t repetitions;
  double median_us, min_us;
};

Point measure(Communicator& comm, int64_t bytes, double budget_s) {
  // Zeros: the sums stay zeros, with no overflow to infinities or denormals over the repetitions.
  std::vector<float> values(static_cast<std::size_t>(bytes / 4), 0.0f);
  // Warm-up: the first calls at a size set up MPI's buffers and fault in pages.
  uint64_t slowest = 0;
  for (int i = 0; i < 3; ++i) slowest = timed_call(comm, values);
  // Every rank runs the same number of repetitions: the slowest rank's estimate decides.
  std::vector<uint64_t> estimate = {std::max<uint64_t>(slowest, 1)};
  comm.max(estimate);
  const auto repetitions =
      static_cast<int64_t>(std::clamp(budget_s * 1e9 / static_cast<double>(estimate[0]), 5.0, 2000.0));
  std::vector<uint64_t> ns(static_cast<std::size_t>(repetitions));
  for (uint64_t& t : ns) t = timed_call(comm, values);
  comm.max(ns);  // each repetition's time is its slowest rank's
  std::sort(ns.begin(), ns.end());
  const std::size_t n = ns.size();
  const double median = n % 2 ? static_cast<double>(ns[n / 2]) : 0.5 * static_cast<double>(ns[n / 2 - 1] + ns[n / 2]);
  return {bytes, repetitions, median / 1e3, static_cast<double>(ns.front()) / 1e3};
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", std::localtime(&now));
  return text;
}

std::string size_text(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20)) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

int run(const Options& o) {
  Communicator& comm = sparsetrain::world();
  const int p = comm.size();
  const double bus_factor = p > 1 ? 2.0 * (p - 1) / p : 0.0;
  std::vector<Point> points;
  const auto start = Clock::now();
  for (int64_t bytes = 4; bytes <= o.max_bytes; bytes *= o.factor) points.push_back(measure(comm, bytes, o.budget_s));
  const double total_s = static_cast<double>(ns_since(start)) / 1e9;
  if (comm.rank() != 0) return 0;

  const std::string cpu = sparsetrain::describe(sparsetrain::cpu_model());
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (o.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const Point& pt : points) {
      const double s = pt.median_us * 1e-6;
      rows.push_back({{"bytes", pt.bytes},
                      {"repetitions", pt.repetitions},
                      {"median_us", pt.median_us},
                      {"min_us", pt.min_us},
                      {"algbw_gbs", static_cast<double>(pt.bytes) / s / 1e9},
                      {"busbw_gbs", bus_factor * static_cast<double>(pt.bytes) / s / 1e9}});
    }
    const nlohmann::json out = {{"benchmark", "allreduce"},
                                {"operation", "float32 sum, in place (Communicator::sum)"},
                                {"communicator", comm.describe()},
                                {"ranks", p},
                                {"cpu", cpu},
                                {"host", host},
                                {"date", today()},
                                {"seconds", total_s},
                                {"sizes", rows}};
    fmt::print("{}\n", out.dump());
    return 0;
  }
  fmt::print("all-reduce, float32 sum in place: {}; {}; {}\n", comm.describe(), cpu, today());
  fmt::print("median over repetitions of the slowest rank's time per call; busbw = 2(p-1)/p x bytes / time\n\n");
  fmt::print("{:>12} {:>10} {:>6} {:>12} {:>12} {:>12} {:>12}\n", "bytes", "size", "reps", "median us", "min us",
             "algbw GB/s", "busbw GB/s");
  for (const Point& pt : points) {
    const double s = pt.median_us * 1e-6;
    fmt::print("{:>12} {:>10} {:>6} {:>12.2f} {:>12.2f} {:>12.3f} {:>12.3f}\n", pt.bytes, size_text(pt.bytes),
               pt.repetitions, pt.median_us, pt.min_us, static_cast<double>(pt.bytes) / s / 1e9,
               bus_factor * static_cast<double>(pt.bytes) / s / 1e9);
  }
  fmt::print("\n{:.1f} s in all\n", total_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int code = 0;
  try {
    sparsetrain::DistributedRuntime runtime(argc, argv);
    try {
      return run(parse(argc, argv));
    } catch (const std::exception& e) {
      code = dynamic_cast<const UsageError*>(&e) ? 2 : 1;
      if (sparsetrain::world().rank() == 0) fmt::print(stderr, "bench_allreduce: {}\n", e.what());
      // Every rank sees a bad command line and stops; any other error may be one rank's alone.
      if (code == 1) sparsetrain::world().abort(code);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_allreduce: {}\n", e.what());
    return 1;
  }
  return code;
}
