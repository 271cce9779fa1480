#include "cli/isa_options.h"

#include <fmt/format.h>

#include "cli/train_command.h"
#include "sparsetrain/core/build_info.h"
#include "sparsetrain/core/cpu_model.h"
#include "sparsetrain/core/error.h"
#include "sparsetrain/core/isa.h"
#include "sparsetrain/kernels/dense_isa.h"
#include "sparsetrain/train/run_environment.h"

namespace sparsetrain {

void apply_isa_options(const IsaOptions& o) {
  if (o.portable) {
    if (!o.max_isa.empty() || !o.onednn_max_isa.empty())
      throw CommandLineError(fmt::format(
          "--portable caps both the kernels and oneDNN at {}; give it without --max-isa and --onednn-max-isa",
          kPortableIsa));
    if (build_info().native)
      fail(
          "--portable: this binary was built with -march=native ({}), so its numbers hold only on CPUs like its "
          "build machine's; build one without it: SPARSETRAIN_BUILD_DIR=build-portable scripts/build.sh "
          "-DSPARSETRAIN_NATIVE=OFF (experiments/run.sh --portable does)",
          build_info().flags);
    const CpuIsa portable = parse_isa(kPortableIsa, "--portable");
    if (cpu_isa() < portable)
      fail("--portable runs {} code, and this CPU ({}) or build has only {}", kPortableIsa, describe(cpu_model()),
           isa_name(cpu_isa()));
    set_max_isa(portable);
    set_dense_max_isa(kPortableIsa, "--portable");
    return;
  }
  if (!o.max_isa.empty()) set_max_isa(parse_isa(o.max_isa, "--max-isa"));
  if (!o.onednn_max_isa.empty()) set_dense_max_isa(o.onednn_max_isa, "--onednn-max-isa");
}

}  // namespace sparsetrain
