"""autobatch.sample on Vulkan (lavapipe in CI, the validation layer on): the banana's draws and
statistics without warm-up equal the interpreter's bit for bit, as `autobatch sample` guarantees
(tests/cli/sample_vulkan_test.cpp); the layer reports nothing. Slow: lavapipe compiles the
sampler for about half a minute."""

import os

os.environ["AB_PYTHON_VALIDATION"] = "1"  # before the first Vulkan run makes the context

import numpy as np

import autobatch
from autobatch import _core
from conftest import SOURCE_DIR


def test_vulkan_draws_equal_the_interpreter():
    model = os.path.join(SOURCE_DIR, "samples", "models", "banana.ab")
    common = dict(chains=5, draws=30, warmup=0, seed=4, progress=False)
    want = autobatch.sample(model, backend="interp", **common)
    got = autobatch.sample(model, backend="vulkan", **common)
    np.testing.assert_array_equal(got.draws, want.draws)
    for key in ["lp", "accept_stat", "tree_depth", "n_leapfrog", "divergent", "energy"]:
        np.testing.assert_array_equal(got.stats[key], want.stats[key])
    assert _core.validation_messages() == []
