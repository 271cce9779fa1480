#pragma once
// Initialization of sparse weights. A dense initialization draws weights with a variance chosen
// for the full fan-in; pruning 90% of a row leaves each unit a tenth of its input variance, and
// deep sparse networks then barely pass a signal (a 90% SET MLP on Fashion-MNIST stays at loss
// ln 10 for hundreds of steps). `Scaled` multiplies each row's kept weights by
// sqrt(cols / kept in the row), which restores the dense pre-activation variance (the scaled
// initialization of Evci et al. 2019, used by RigL).
#include <string>

#include "sparsetrain/models/model.h"

namespace sparsetrain {

enum class SparseInit {
  Dense,   // the dense initialization's values at the kept positions (Cerebras, Graphcore)
  Scaled,  // ... times sqrt(fan-in / kept fan-in), row by row
};

SparseInit parse_sparse_init(const std::string& text, const std::string& source);  // "dense", "scaled"
const char* sparse_init_name(SparseInit init);

// Applies `init` to every sparse parameter of two or more dimensions (rows of its matrix view);
// `Dense` changes nothing. Call after the masks are applied, before training.
void apply_sparse_init(Model& model, SparseInit init);

}  // namespace sparsetrain
