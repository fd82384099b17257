"""autobatch.sample on Vulkan (lavapipe in CI, the validation layer on): the banana's draws and
statistics without warm-up equal the interpreter's bit for bit, as `autobatch sample` guarantees
(tests/cli/sample_vulkan_test.cpp); the layer reports nothing. Slow: lavapipe compiles the
sampler for about half a minute."""

import os
import subprocess
import sys

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


def test_sample_over_two_logical_devices_equals_one_device():
    # lavapipe opened twice (devices=[0, 0], the testing form of devices="all" on a machine with
    # two GPUs): 5 chains cut 3 + 2, the fit bit for bit the single device's.
    model = os.path.join(SOURCE_DIR, "samples", "models", "banana.ab")
    common = dict(chains=5, draws=30, warmup=0, seed=4, progress=False, backend="vulkan")
    want = autobatch.sample(model, **common)
    got = autobatch.sample(model, devices=[0, 0], **common)
    np.testing.assert_array_equal(got.draws, want.draws)
    for key in ["lp", "accept_stat", "tree_depth", "n_leapfrog", "divergent", "energy"]:
        np.testing.assert_array_equal(got.stats[key], want.stats[key])
    assert autobatch.sample(model, devices="all", **common).draws.shape == want.draws.shape


CTRL_C_DURING_THE_COMPILE = """
import os, signal, sys, threading, time
import autobatch
sent = []
def interrupt():
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(0.5, interrupt).start()
try:
    autobatch.sample(sys.argv[1], chains=2, draws=10, warmup=10, backend="vulkan", progress=False)
    print("finished")
except KeyboardInterrupt:
    print("interrupted after %.3f s" % (time.monotonic() - sent[0]), flush=True)
"""


def test_ctrl_c_during_the_compile_raises_at_once(tmp_path):
    # An empty kernel cache (XDG_CACHE_HOME, Mesa's too): the sampler's kernels compile for tens
    # of seconds on lavapipe, and polled nothing: Ctrl-C used to arrive when the compile ended.
    # Now it raises within a poll; the compile finishes alone, and the exit waits for it.
    model = os.path.join(SOURCE_DIR, "samples", "models", "banana.ab")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), MESA_SHADER_CACHE_DISABLE="true")
    env.pop("AB_PYTHON_VALIDATION", None)
    done = subprocess.run([sys.executable, "-c", CTRL_C_DURING_THE_COMPILE, model], env=env,
                          capture_output=True, text=True, timeout=600)
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("interrupted after "), done.stdout + done.stderr
    assert float(done.stdout.split()[2]) < 2.0
