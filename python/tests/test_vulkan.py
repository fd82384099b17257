"""Module.run on Vulkan (lavapipe in CI) with the validation layer on: the results equal the
interpreter's (the oracle) for several samples and batch sizes, every run shares the one device
context of the process, two threads may run at once, and the layer reports nothing."""

import os
import threading

os.environ["AB_PYTHON_VALIDATION"] = "1"  # before the first Vulkan run makes the context

import numpy as np
import pytest

import autobatch
from autobatch import _core
from conftest import read, sample_path


def lanes_inputs(name, lanes):
    rng = np.random.default_rng(lanes)
    if name == "fib.ab":
        return {"n": rng.integers(0, 16, lanes)}
    if name == "collatz.ab":
        return {"n": rng.integers(1, 200, lanes)}
    if name == "divmod.ab":
        return {"a": rng.integers(-1000, 1000, lanes), "b": rng.integers(1, 50, lanes)}
    return {"a": rng.random(lanes, dtype=np.float32), "b": 1 + rng.random(lanes, dtype=np.float32)}


@pytest.mark.parametrize("lanes", [1, 13, 300])
@pytest.mark.parametrize("name", ["fib.ab", "collatz.ab", "divmod.ab", "simpson.ab"])
def test_vulkan_equals_the_interpreter(name, lanes):
    module = autobatch.Module.compile(read(sample_path(name)), file=name)
    inputs = lanes_inputs(name, lanes)
    want = module.run(inputs=inputs, backend="interp")
    for schedule in ["local", "global"]:
        got = module.run(inputs=inputs, backend="vulkan", schedule=schedule)
        assert got.faults == want.faults
        for key in want.outputs:
            if want.outputs[key].dtype == np.float32:
                np.testing.assert_allclose(got.outputs[key], want.outputs[key], rtol=1e-5)
            else:
                np.testing.assert_array_equal(got.outputs[key], want.outputs[key])
    assert _core.validation_messages() == []


def test_two_threads_share_the_context():
    fib = autobatch.Module.compile(read(sample_path("fib.ab")))
    n = np.arange(16)
    want = fib.run(inputs={"n": n}, backend="interp").outputs["result"]
    results = [None] * 2

    def work(k):
        results[k] = fib.run(inputs={"n": n}, backend="vulkan").outputs["result"]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, want)
    assert _core.validation_messages() == []
