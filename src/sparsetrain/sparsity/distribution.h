#pragma once
// How one overall sparsity level is spread over the sparse parameters.
//
//   uniform  every parameter gets the level.
//   ER       Erdős–Rényi (Mocanu et al.): density proportional to (n_in + n_out) / (n_in n_out)
//            with shape [n_out, n_in, ...] (the layout of a linear or convolution weight),
//            scaled so the total kept count matches uniform's. Vectors fall back to ERK.
//   ERK      Erdős–Rényi-Kernel (Evci et al.): density proportional to sum(shape) / prod(shape)
//            over all dimensions (equal to ER for matrices).
//
// The ER/ERK scale follows RigL's solve: eps is chosen so that the kept counts add up to
// sum_l (N_l - floor(s N_l)); a parameter whose density eps * raw_l would exceed 1 becomes dense
// (its kept weights still count against the budget) and eps is solved again. Parameters with a
// fixed per-parameter level (overrides) sit outside the solve.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sparsetrain {

enum class Distribution { Uniform, ER, ERK };

Distribution parse_distribution(const std::string& text, const std::string& source);
const char* distribution_name(Distribution d);

struct ParameterShape {
  std::string name;
  std::vector<int64_t> shape;
};

// The level of each parameter, in the order given. `overrides` maps parameter names to fixed
// levels; a name that is not among the parameters is an error.
std::vector<double> distribute_sparsity(Distribution d, double sparsity, const std::vector<ParameterShape>& params,
                                        const std::map<std::string, double>& overrides = {});

}  // namespace sparsetrain
