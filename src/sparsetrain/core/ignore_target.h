#pragma once
// The target of a position that makes no prediction (a BERT token that is not masked): torch's
// ignore_index. Shared by the data that writes targets and the models and losses that read them.
#include <cstdint>

namespace sparsetrain {

inline constexpr int32_t kIgnoreTarget = -100;

}  // namespace sparsetrain
