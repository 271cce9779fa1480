#!/usr/bin/python3
"""Writes numpy_shuffle_fixture.txt for test_numpy_shuffle.cpp from numpy itself (Debian's
python3-numpy; the tests do not need it).

Each case seeds the legacy generator, np.random.seed(seed), and shuffles np.arange(n) for each
size in turn from that one stream, as the SET tutorial's Fashion-MNIST loader does with
(60000, 10000) at seed 0. One line per permutation:

    <seed> <case position> <n> <k>: <first k entries of the permutation>
"""
import pathlib

import numpy as np

CASES = [
    (0, [60000, 10000], [2000, 1000]),  # the SET reference's training and test subsets
    (12345, [7, 1, 0, 300], [7, 1, 0, 300]),  # whole permutations, empty and one-element ones
    (4294967295, [65537, 2], [64, 2]),  # the largest seed; a size just past a power of two
]

lines = []
for seed, sizes, keep in CASES:
    np.random.seed(seed)
    for position, (n, k) in enumerate(zip(sizes, keep)):
        order = np.arange(n)
        np.random.shuffle(order)
        lines.append(f"{seed} {position} {n} {k}: " + " ".join(str(i) for i in order[:k]))

out = pathlib.Path(__file__).with_name("numpy_shuffle_fixture.txt")
out.write_text("\n".join(lines) + "\n")
print(f"wrote {out} ({len(lines)} permutations, numpy {np.__version__})")
