#pragma once
// Cerebras' sideband checkpoints mark a pruned weight with NaN (in the weight and in every
// optimizer state of its shape); sparsetrain stores zeros at pruned positions plus a
// `<name>_mask` tensor. These convert one state dict form into the other.
#include "sparsetrain/nn/state_dict.h"

namespace sparsetrain {

// Every `<name>` that has a `<name>_mask` gets NaN at pruned positions; the masks are dropped.
// A mask whose tensor is missing or differently shaped, and NaN already in a tensor of a state
// with masks (it would read as pruned), are Errors naming them.
StateDict to_nan_form(const StateDict& state);

// Every float tensor holding a NaN becomes sparse: NaN -> 0 and a `<name>_mask` (1 where the
// value is not NaN) is added right after it; tensors without NaN stay dense. NaN in a state that
// has masks already is an Error naming the tensor and a mask (the two forms must not be mixed).
StateDict from_nan_form(const StateDict& state);

}  // namespace sparsetrain
