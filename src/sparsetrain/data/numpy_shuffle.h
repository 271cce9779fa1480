#pragma once
// The permutations numpy's legacy generator gives: np.random.seed(seed), then
// np.random.shuffle(np.arange(n)) for each n in turn, all from the one Mersenne Twister stream.
// Reference code that picks a data subset this way (the SET tutorial's loader shuffles the
// Fashion-MNIST training indices, then the test indices, after np.random.seed(0)) gets the same
// images here. See docs/data.md.
#include <cstdint>
#include <span>
#include <vector>

namespace sparsetrain {

// One permutation of 0..n-1 per entry of `sizes`, in order. Each n must be in [0, 2^32].
std::vector<std::vector<int64_t>> numpy_legacy_shuffles(std::span<const int64_t> sizes, uint32_t seed);

}  // namespace sparsetrain
