"""autobatch.sample on the CPU VM: a Gaussian with known mean and sd is recovered; the draws,
the per-draw statistics and the summary equal `autobatch sample`'s for the same model, seed and
options (one implementation: the sampler library); bad models, data and init raise the
documented errors."""

import json
import math
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import autobatch
from conftest import CLI, SOURCE_DIR

GAUSSIAN = """
// mu: a normal with mean 2 and sd 0.5, as a struct of parameters; sigma: a bounded scale.
struct Params { mu: float, sigma: float<lower=0> }
uniform y: float[4];
fn log_density(p: Params) -> float {
    var lp = -0.5 * ((p.mu - 2.0) / 0.5) * ((p.mu - 2.0) / 0.5);
    lp += -p.sigma;   // sigma ~ exponential(1)
    return lp + 0.0 * y[0];
}
"""

DATA = {"y": np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)}


def test_a_gaussian_recovers_its_mean_and_sd():
    fit = autobatch.sample(GAUSSIAN, data=DATA, chains=4, draws=500, warmup=300, seed=3,
                           backend="vm", progress=False)
    assert fit.draws.shape == (4, 500, 2)
    assert fit.parameter_names == ["mu", "sigma"]
    summary = fit.summary()
    names = list(summary["name"]) if isinstance(summary, dict) else list(summary.index)
    assert names == ["mu", "sigma"]
    mean = np.asarray(summary["mean"])
    mcse = np.asarray(summary["mcse_mean"])
    assert abs(mean[0] - 2.0) < 4 * mcse[0]
    assert abs(mean[1] - 1.0) < 4 * mcse[1]
    assert abs(fit.draws[:, :, 0].std() - 0.5) < 0.06
    assert (fit.draws[:, :, 1] > 0).all()
    assert np.asarray(summary["rhat"]).max() < 1.05
    for key in ["lp", "accept_stat", "step_size", "tree_depth", "n_leapfrog", "n_grad",
                "divergent", "energy"]:
        assert fit.stats[key].shape == (4, 500)
    assert fit.stats["divergent"].dtype == np.bool_
    assert fit.stats["n_leapfrog"].min() >= 1
    assert "mu" in fit.summary_text()


def test_draws_equal_the_cli(tmp_path):
    model = tmp_path / "gaussian.ab"
    model.write_text(GAUSSIAN)
    np.save(tmp_path / "y.npy", DATA["y"])
    subprocess.run([CLI, "sample", str(model), "--backend", "vm", "--chains", "3", "--draws",
                    "200", "--warmup", "150", "--seed", "9", "--uniform",
                    "y=@" + str(tmp_path / "y.npy"), "--out", str(tmp_path / "fit"),
                    "--format", "json"], check=True, capture_output=True)
    fit = autobatch.sample(str(model), data=DATA, chains=3, draws=200, warmup=150, seed=9,
                           backend="vm", progress=False)
    np.testing.assert_array_equal(fit.draws, np.load(tmp_path / "fit" / "draws.npy"))
    np.testing.assert_array_equal(fit.stats["energy"], np.load(tmp_path / "fit" / "energy.npy"))
    np.testing.assert_array_equal(fit.stats["n_grad"], np.load(tmp_path / "fit" / "n_grad.npy"))
    summary = json.loads((tmp_path / "fit" / "summary.json").read_text())
    ours = fit.summary()
    for i, p in enumerate(summary["parameters"]):
        assert p["mean"] == pytest.approx(float(np.asarray(ours["mean"])[i]), rel=1e-12)
        assert p["ess_bulk"] == pytest.approx(float(np.asarray(ours["ess_bulk"])[i]), rel=1e-12)


def test_the_default_backend_gives_the_vms_draws():
    # "auto": the vm without a GPU, Vulkan with one; both give the vm's draws bit for bit.
    chosen = autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=30, warmup=30, seed=4,
                              progress=False)
    vm = autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=30, warmup=30, seed=4,
                          backend="vm", progress=False)
    np.testing.assert_array_equal(chosen.draws, vm.draws)
    with pytest.raises(ValueError, match="'auto', 'vulkan', 'vm' or 'interp'"):
        autobatch.sample(GAUSSIAN, data=DATA, chains=2, backend="gpu")


def test_init_by_name_and_as_array():
    by_name = autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=20, warmup=0, seed=1,
                               backend="vm", init={"mu": 1.5, "sigma": 0.7}, progress=False)
    as_array = autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=20, warmup=0, seed=1,
                                backend="vm", init=np.array([[1.5, 0.7]] * 2), progress=False)
    np.testing.assert_array_equal(by_name.draws, as_array.draws)
    with pytest.raises(ValueError, match="unknown parameter 'tau'"):
        autobatch.sample(GAUSSIAN, data=DATA, chains=2, backend="vm", init={"tau": 1.0})
    with pytest.raises(ValueError, match=r"sigma = -1 is not above its lower bound 0"):
        autobatch.sample(GAUSSIAN, data=DATA, chains=1, draws=10, warmup=0, backend="vm",
                         init=np.array([[0.0, -1.0]]))
    with pytest.raises(ValueError, match=r"init has shape \(1, 2\): expected \(2, 2\)"):
        autobatch.sample(GAUSSIAN, data=DATA, chains=2, backend="vm", init=np.zeros((1, 2)))


def test_bad_models_and_data_raise():
    with pytest.raises(autobatch.CompileError, match="no function 'log_density'"):
        autobatch.sample("fn other(q: float[2]) -> float { return 0.0; }\n", backend="vm")
    with pytest.raises(autobatch.CompileError, match=r"<model>:2:"):
        autobatch.sample("\nfn log_density(q: float[2]) -> float { return q; }\n", backend="vm")
    with pytest.raises(ValueError, match=r"uniform 'y' has shape \(3,\)"):
        autobatch.sample(GAUSSIAN, data={"y": np.zeros(3, np.float32)}, backend="vm")
    with pytest.raises(ValueError, match=r"chains 0 is not in \[1, 1048576\]"):
        autobatch.sample(GAUSSIAN, data=DATA, chains=0, backend="vm")
    with pytest.raises(ValueError, match=r"step_jitter -0.5 is not in \[0, 1\]"):
        autobatch.sample(GAUSSIAN, data=DATA, step_jitter=-0.5, backend="vm")


def test_model_from_a_path():
    path = os.path.join(SOURCE_DIR, "tests", "data", "models", "gaussian_iid.ab")
    fit = autobatch.sample(path, chains=2, draws=100, warmup=150, seed=2, backend="vm",
                           progress=False)
    assert fit.model_name == "gaussian_iid"
    assert fit.draws.shape == (2, 100, 3)


def test_ctrl_c_stops_sampling_with_keyboard_interrupt():
    import signal
    import threading
    import time

    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=500_000, warmup=150,
                             backend="vm", threads=1, progress=False)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10  # stopped, not the million draws


def test_warnings_and_faulted_chains_are_python_warnings():
    # A short warm-up with few draws: Stan's ESS check fires; the warning is also in fit.warnings.
    with pytest.warns(RuntimeWarning) as caught:
        fit = autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=20, warmup=10, seed=1,
                               backend="vm", progress=False)
    assert fit.warnings and [str(w.message) for w in caught] == fit.chain_messages + fit.warnings
    faulty = "fn log_density(q: float[2]) -> float {\n    let a = [1.0, 2.0];\n" \
             "    return -q[0] * q[0] - q[1] * q[1] + a[int(q[0] * 100.0) + 5] * 0.0;\n}\n"
    with pytest.warns(RuntimeWarning, match="faulted: index_out_of_range"):
        fit = autobatch.sample(faulty, chains=2, draws=50, warmup=20, seed=2, backend="vm",
                               progress=False)


# What the CLI refuses and the library used to accept, giving fits whose chains never move:
# (keyword, value, the CLI's flag and value, the message after the option's name).
BAD_OPTIONS = [
    ("leaf_steps", 0, "0", "0 is not in [1, 1000]"),
    ("max_depth", 0, "0", "0 is not in [1, 30]"),
    ("max_depth", 100, "100", "100 is not in [1, 30]"),
    ("target_accept", math.nan, "nan", "nan is not in [0.05, 0.995]"),
    ("target_accept", 0.0, "0", "0 is not in [0.05, 0.995]"),
    ("target_accept", 2.0, "2", "2 is not in [0.05, 0.995]"),
    ("step_size", 0.0, "0", "0 is not in [1e-08, 10000]"),
    ("step_size", -1.0, "-1", "-1 is not in [1e-08, 10000]"),
    ("step_size", math.inf, "inf", "inf is not in [1e-08, 10000]"),
    ("step_size", math.nan, "nan", "nan is not in [1e-08, 10000]"),
    ("draws", 0, "0", "0 is not in [1, 16777216]"),
    ("max_steps", 0, "0", "0 is not in [1, 4294967295]"),
]


@pytest.mark.parametrize("keyword,value,flag_value,message", BAD_OPTIONS,
                         ids=["%s=%s" % (b[0], b[1]) for b in BAD_OPTIONS])
def test_options_the_cli_refuses_are_refused_with_its_message(tmp_path, keyword, value,
                                                              flag_value, message):
    options = dict(chains=2, draws=10, warmup=10, backend="vm", progress=False)
    options[keyword] = value
    with pytest.raises(ValueError) as refused:
        autobatch.sample(GAUSSIAN, data=DATA, **options)
    assert str(refused.value) == keyword + " " + message
    if not os.path.exists(CLI):
        return
    model = tmp_path / "gaussian.ab"
    model.write_text(GAUSSIAN)
    flag = "--" + keyword.replace("_", "-")
    done = subprocess.run([CLI, "sample", str(model), "--backend", "vm", flag + "=" + flag_value,
                           "--out", str(tmp_path / "fit")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "error: " + flag + " " + message in done.stderr


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_model_path_that_names_no_file_is_no_such_file(tmp_path):
    # A string with neither a newline nor a '{' is a path (every model's source has a body).
    for typo in ["samples/models/eight_shcools.ab", "eight_schools", str(tmp_path / "m.ab")]:
        with pytest.raises(FileNotFoundError, match=re.escape("no such model file: '%s'" % typo)):
            autobatch.sample(typo, backend="vm")
    path = pathlib.Path(SOURCE_DIR) / "tests" / "data" / "models" / "gaussian_iid.ab"
    fit = autobatch.sample(path, chains=2, draws=10, warmup=10, backend="vm", progress=False)
    assert fit.model_name == "gaussian_iid"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_chain_the_fit_does_not_have_is_an_index_error():
    fit = autobatch.sample(GAUSSIAN, data=DATA, chains=2, draws=10, warmup=10, backend="vm",
                           progress=False)
    with pytest.raises(IndexError, match=r"no chain 2 in a fit of 2 chains \(0 to 1\)"):
        fit._core.cmdstan_csv("gaussian", 2)


TYPES = os.path.join(SOURCE_DIR, "tests", "data", "models", "constrained_types.ab")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 50 draws: Stan's ESS warnings
def test_constrained_types_and_generated_quantities_are_columns_of_the_fit():
    # s: simplex[3], o: ordered[2], po: positive_ordered[2]; then transformed gap, generated
    # y_rep, heads, z[2] (tests/data/models/constrained_types.ab).
    init = {"s": [0.2, 0.3, 0.5], "o": [-1.0, 2.0], "po": [0.5, 3.0]}
    fit = autobatch.sample(pathlib.Path(TYPES), chains=2, draws=50, warmup=50, seed=4,
                           backend="vm", init=init, progress=False)
    assert fit.parameter_names == ["s[0]", "s[1]", "s[2]", "o[0]", "o[1]", "po[0]", "po[1]",
                                   "gap", "y_rep", "heads", "z[0]", "z[1]"]
    assert fit.draws.shape == (2, 50, 12)
    assert np.allclose(fit.draws[:, :, 0:3].sum(axis=2), 1.0, atol=1e-6)
    assert (fit.draws[:, :, 3] < fit.draws[:, :, 4]).all()
    assert np.array_equal(fit.draws[:, :, 7], fit.draws[:, :, 4] - fit.draws[:, :, 3])
    # The inverse metric is over the unconstrained coordinates: a simplex of 3 has 2.
    assert len(fit.inv_metrics[0]) == 6
    with pytest.raises(ValueError, match="is not a simplex"):
        autobatch.sample(pathlib.Path(TYPES), chains=1, draws=5, warmup=5, backend="vm",
                         init={"s": [0.5, 0.5, 0.5], "o": [-1.0, 2.0], "po": [0.5, 3.0]},
                         progress=False)


SIZED = """
const N: int = data;
uniform y: float[N];
struct Params { mu: float }
fn log_density(p: Params) -> float { return normal_lpdf(y | p.mu, 1.0); }
"""


def sample_as_the_cli(name, keys, tmp_path):
    """posteriordb port `name` sampled from its data's `keys` (the file also holds columns the
    model skips), checked to give the CLI's draws from the whole file; its model and data."""
    pdb = pathlib.Path(SOURCE_DIR) / "samples" / "data" / "posteriordb" / name
    model = pathlib.Path(SOURCE_DIR) / "samples" / "models" / "posteriordb" / (name + ".ab")
    data = json.loads((pdb / "data.json").read_text())
    data = {k: data[k] for k in keys}
    fit = autobatch.sample(model, data=data, chains=2, draws=30, warmup=30, seed=4, backend="vm",
                           progress=False)
    subprocess.run([CLI, "sample", str(model), "--backend", "vm", "--chains", "2", "--draws", "30",
                    "--warmup", "30", "--seed", "4", "--data", str(pdb / "data.json"), "--out",
                    str(tmp_path / "fit"), "--format", "json"], check=True, capture_output=True)
    np.testing.assert_array_equal(fit.draws, np.load(tmp_path / "fit" / "draws.npy"))
    return model, data


def test_data_constants_size_the_model_as_the_clis_data_file(tmp_path):
    # A posteriordb data file, loaded as it is: its "N" sizes the model, its arrays are uniforms.
    sample_as_the_cli("earnings-earn_height", ("N", "earn", "height"), tmp_path)


def test_data_constants_from_numpy_scalars_and_their_errors():
    y = np.arange(5, dtype=np.float32)
    fit = autobatch.sample(SIZED, data={"N": np.int64(5), "y": y}, chains=2, draws=20, warmup=20,
                           backend="vm", progress=False)
    assert fit.draws.shape == (2, 20, 1)
    with pytest.raises(autobatch.CompileError, match="constant 'N' is read from the data"):
        autobatch.sample(SIZED, data={"y": y}, chains=2, backend="vm", progress=False)
    with pytest.raises(ValueError, match="'y'"):  # N = 4 sizes y, which holds 5
        autobatch.sample(SIZED, data={"N": 4, "y": y}, chains=2, backend="vm", progress=False)
    with pytest.raises(autobatch.CompileError, match="'N'"):  # not a whole number
        autobatch.sample(SIZED, data={"N": 4.5, "y": y}, chains=2, backend="vm", progress=False)
    module = autobatch.Module.compile(
        "const N: int = data;\nfn main(x: int) -> int { return x * N; }", constants={"N": 7})
    result = module.run(inputs={"x": np.array([1, 2], dtype=np.int32)}, backend="vm")
    np.testing.assert_array_equal(result.outputs["result"], [7, 14])


def test_transformed_data_are_computed_as_the_clis(tmp_path):
    # Issue 45: the port's logs (Stan's transformed data) are computed from the data given, and
    # the draws are the CLI's; binding one by hand is refused.
    model, data = sample_as_the_cli(
        "mesquite-logmesquite_logva", ("N", "weight", "diam1", "diam2", "canopy_height", "group"),
        tmp_path)
    with pytest.raises(ValueError, match="'log_weight' is computed from the data"):
        autobatch.sample(model, data=dict(data, log_weight=data["weight"]), chains=2,
                         backend="vm", progress=False)
