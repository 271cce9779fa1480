#include "sparsetrain/models/sparse_init.h"

#include <cmath>

#include "sparsetrain/core/error.h"

namespace sparsetrain {

SparseInit parse_sparse_init(const std::string& text, const std::string& source) {
  if (text == "dense") return SparseInit::Dense;
  if (text == "scaled") return SparseInit::Scaled;
  fail("{}: unknown sparse initialization '{}'; expected dense or scaled", source, text);
}

const char* sparse_init_name(SparseInit init) { return init == SparseInit::Scaled ? "scaled" : "dense"; }

void apply_sparse_init(Model& model, SparseInit init) {
  if (init == SparseInit::Dense) return;
  for (Parameter* p : model.parameters()) {
    if (!p->is_sparse() || p->shape().size() < 2) continue;
    const Mask mask = p->mask();
    Matrix w = p->to_dense();
    for (int64_t r = 0; r < w.rows(); ++r) {
      int64_t kept = 0;
      for (int64_t c = 0; c < w.cols(); ++c) kept += mask.at(r, c) ? 1 : 0;
      if (kept == 0) continue;
      const auto scale = static_cast<float>(std::sqrt(static_cast<double>(w.cols()) / static_cast<double>(kept)));
      for (int64_t c = 0; c < w.cols(); ++c) w.at(r, c) *= scale;
    }
    p->assign_dense(w);
  }
}

}  // namespace sparsetrain
