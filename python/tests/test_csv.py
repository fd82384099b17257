"""Fit.to_csv and `autobatch sample --csv`: one CmdStan CSV per chain that a small reader
following CmdStan's documented format ("Stan CSV File Format": `#` comments, one header row, one
row per draw, the adaptation as comments after the header) reads back into exactly the fit's
draws and statistics; the CLI's files hold the same rows; ArviZ reads them where installed."""

import json
import os
import subprocess

import numpy as np
import pytest

import autobatch
from conftest import CLI

MODEL = """
struct Params { theta: float[2], tau: float<lower=0> }
fn log_density(p: Params) -> float {
    return -0.5 * (p.theta[0] * p.theta[0] + (p.theta[1] - 1.0) * (p.theta[1] - 1.0)) - p.tau;
}
"""


def read_stan_csv(path):
    """(config dict, column names, rows [draws, columns], adaptation comment lines)."""
    config, columns, rows, adaptation = {}, None, [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                body = line[1:]
                if columns is None and "=" in body:
                    key, value = body.split("=", 1)
                    config[key.strip()] = value.strip().replace(" (Default)", "")
                elif columns is not None and not rows:
                    adaptation.append(body.strip())
                continue
            if columns is None:
                columns = line.split(",")
            else:
                rows.append([float(x) for x in line.split(",")])
    return config, columns, np.array(rows), adaptation


def test_to_csv_round_trips(tmp_path):
    fit = autobatch.sample(MODEL, chains=2, draws=150, warmup=150, seed=5, backend="vm",
                           progress=False)
    fit.model_name = "two"
    paths = fit.to_csv(str(tmp_path))
    assert [p.split("/")[-1] for p in paths] == ["two-1.csv", "two-2.csv"]
    for chain, path in enumerate(paths):
        config, columns, rows, adaptation = read_stan_csv(path)
        assert config["model"] == "two" and config["num_samples"] == "150"
        assert config["id"] == str(chain + 1)
        assert columns == ["lp__", "accept_stat__", "stepsize__", "treedepth__",
                           "n_leapfrog__", "divergent__", "energy__", "theta.1", "theta.2",
                           "tau"]
        assert adaptation[0] == "Adaptation terminated"
        assert np.float32(float(adaptation[1].split("=")[1])) == np.float32(fit.step_sizes[chain])
        metric = np.array([float(x) for x in adaptation[3].split(",")], dtype=np.float32)
        np.testing.assert_array_equal(metric, np.asarray(fit.inv_metrics[chain], np.float32))
        assert rows.shape == (150, 10)
        np.testing.assert_array_equal(rows[:, 7:].astype(np.float32), fit.draws[chain])
        for column, key in [(0, "lp"), (1, "accept_stat"), (2, "step_size"), (6, "energy")]:
            np.testing.assert_array_equal(rows[:, column].astype(np.float32),
                                          fit.stats[key][chain])
        np.testing.assert_array_equal(rows[:, 3], fit.stats["tree_depth"][chain])
        np.testing.assert_array_equal(rows[:, 4], fit.stats["n_leapfrog"][chain])
        np.testing.assert_array_equal(rows[:, 5], fit.stats["divergent"][chain])


GRID = """
struct Params { a: float, m: float[2][3] }
fn sq(x: float) -> float { return x * x; }
fn log_density(p: Params) -> float {
    return -0.5 * (sq(p.a) + sq(p.m[0][0]) + sq(p.m[0][1] - 10.0) + sq(p.m[0][2] - 20.0)
                   + sq(p.m[1][0] - 30.0) + sq(p.m[1][1] - 40.0) + sq(p.m[1][2] - 50.0));
}
"""


def test_to_csv_writes_arrays_column_major(tmp_path):
    # m[i][j] is near 10 (3 i + j): [[0, 10, 20], [30, 40, 50]], each cell told apart.
    fit = autobatch.sample(GRID, chains=1, draws=20, warmup=50, seed=3, backend="vm",
                           progress=False)
    (path,) = fit.to_csv(str(tmp_path))
    _, columns, rows, _ = read_stan_csv(path)
    assert columns[7:] == ["a", "m.1.1", "m.2.1", "m.1.2", "m.2.2", "m.1.3", "m.2.3"]
    draws = fit.draws[0]  # [draws, 7]: a, then m row-major, as parameter_names lists them
    assert fit.parameter_names[1:] == ["m[%d][%d]" % (i, j) for i in range(2) for j in range(3)]
    # By name: m.I.J holds cell (I - 1, J - 1).
    for k, name in enumerate(columns[7:], start=7):
        if name.startswith("m."):
            i, j = int(name[2]) - 1, int(name[4]) - 1
            np.testing.assert_array_equal(rows[:, k].astype(np.float32), draws[:, 1 + 3 * i + j])
    # By position, as rstan::read_stan_csv rebuilds it: Fortran order, first index fastest.
    rebuilt = rows[:, 8:14].astype(np.float32).reshape(-1, 3, 2).transpose(0, 2, 1)
    np.testing.assert_array_equal(rebuilt, draws[:, 1:].reshape(-1, 2, 3))
    assert np.all(np.abs(rebuilt.mean(axis=0) - [[0, 10, 20], [30, 40, 50]]) < 2)


def test_cli_csv_holds_the_same_rows(tmp_path):
    model = tmp_path / "two.ab"
    model.write_text(MODEL)
    subprocess.run([CLI, "sample", str(model), "--backend", "vm", "--chains", "2", "--draws",
                    "100", "--warmup", "150", "--seed", "4", "--csv", "--out",
                    str(tmp_path / "fit")], check=True, capture_output=True)
    fit = autobatch.sample(str(model), chains=2, draws=100, warmup=150, seed=4, backend="vm",
                           progress=False)
    ours = fit.to_csv(str(tmp_path / "ours"))
    for chain in range(2):
        _, columns, rows, _ = read_stan_csv(tmp_path / "fit" / ("two-%d.csv" % (chain + 1)))
        _, our_columns, our_rows, _ = read_stan_csv(ours[chain])
        assert columns == our_columns
        np.testing.assert_array_equal(rows, our_rows)


def test_arviz_reads_the_files(tmp_path):
    arviz = pytest.importorskip("arviz")
    fit = autobatch.sample(MODEL, chains=2, draws=100, warmup=150, seed=5, backend="vm",
                           progress=False)
    data = arviz.from_cmdstan(fit.to_csv(str(tmp_path)))
    assert data.posterior["tau"].shape == (2, 100)


def test_save_writes_the_files_sample_out_writes(tmp_path):
    """Fit.save and `autobatch sample --out` go through the library's one writer: the same set of
    files, the same draws and statistics, summary.json's settings and summary alike."""
    model = tmp_path / "two.ab"
    model.write_text(MODEL)
    subprocess.run([CLI, "sample", str(model), "--backend", "vm", "--chains", "2", "--draws",
                    "60", "--warmup", "150", "--seed", "4", "--csv", "--out",
                    str(tmp_path / "cli")], check=True, capture_output=True)
    fit = autobatch.sample(str(model), chains=2, draws=60, warmup=150, seed=4, backend="vm",
                           progress=False)
    paths = fit.save(str(tmp_path / "ours"), csv=True)
    cli_files = sorted(p.name for p in (tmp_path / "cli").iterdir() if p.name[0] != ".")
    assert sorted(os.path.basename(p) for p in paths) == cli_files
    assert "draws.npy" in cli_files and "two-2.csv" in cli_files
    np.testing.assert_array_equal(np.load(tmp_path / "ours" / "draws.npy"), fit.draws)
    for name in cli_files:
        if name.endswith(".npy"):
            np.testing.assert_array_equal(np.load(tmp_path / "ours" / name),
                                          np.load(tmp_path / "cli" / name))
    ours = json.loads((tmp_path / "ours" / "summary.json").read_text())
    theirs = json.loads((tmp_path / "cli" / "summary.json").read_text())
    for key in ["model", "backend", "chains", "draws", "warmup", "seed", "complete",
                "parameters", "warnings", "gradient_evaluations", "divergences", "files"]:
        assert ours[key] == theirs[key], key


def test_save_refuses_a_file_as_the_folder(tmp_path):
    fit = autobatch.sample(MODEL, chains=1, draws=20, warmup=20, seed=1, backend="vm",
                           progress=False)
    (tmp_path / "taken").write_text("x")
    with pytest.raises(OSError, match="is a file"):
        fit.save(str(tmp_path / "taken"))
    assert (tmp_path / "taken").read_text() == "x"
