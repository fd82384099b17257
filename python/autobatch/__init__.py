"""autobatch from Python: compile and run .ab programs on numpy arrays, and sample models with
batched NUTS into arrays and into CmdStan's CSV (docs/python.md).

    import numpy as np, autobatch
    fib = autobatch.Module.compile(open("samples/fib.ab").read(), file="fib.ab")
    result = fib.run(inputs={"n": np.arange(20, dtype=np.int32)}, backend="vm")
    result.outputs["result"]          # array([0, 1, 1, 2, 3, 5, ...], dtype=int32)

    fit = autobatch.sample("samples/models/eight_schools.ab", data={...}, chains=4, seed=1)
    fit.summary()                     # mean, sd, mcse, quantiles, R-hat, ESS per parameter
    fit.to_csv("fit/")                # one CmdStan CSV per chain
    fit.save("fit/")                  # the files `autobatch sample --out fit/` writes

The C++ core (_core, python/core.cpp) does the work with the GIL released; Ctrl-C stops a run
within a second with KeyboardInterrupt.
"""

import os
import warnings
from collections import namedtuple

import numpy as np

from . import _core
from ._core import CompileError

__all__ = ["Module", "Result", "Fit", "sample", "CompileError", "Value"]

# One value of a program's interface: its name, source type, numpy dtype and shape (per lane for
# inputs and the output). A struct has dtype and shape None and `fields`: name -> (dtype, shape).
Value = namedtuple("Value", ["name", "type", "dtype", "shape", "fields"])


def _value(d):
    return Value(d["name"], d["type"], d["dtype"], d["shape"], d.get("fields"))


class Result:
    """What a run gives back: `outputs` (name -> array [lanes, ...]; a struct output one array
    per field), `emitted` (for a program that emits: name -> one array [records, ...] per lane),
    `faults` (one dict per faulted lane: lane, code, function, line, step, detail) and `statistics` (a
    dict)."""

    def __init__(self, raw):
        self.outputs = raw["outputs"]
        self.emitted = raw["emitted"]
        self.faults = raw["faults"]
        self.statistics = raw["statistics"]

    def __repr__(self):
        return "Result(outputs=%s, faults=%d)" % (list(self.outputs), len(self.faults))


class Module:
    """A compiled program. Immutable: share it between threads."""

    def __init__(self, core):
        self._core = core

    @staticmethod
    def compile(source, entry="main", file=None, constants=None):
        """Compiles .ab source; raises CompileError ("file:line:col: error: ..." and the caret).
        `constants`: name -> number, the values of the program's `const N: int = data;` (what
        the CLI reads from --data)."""
        return Module(_core.Module.compile(source, entry, file, _numbers(constants or {})))

    @property
    def inputs(self):
        return [_value(d) for d in self._core.inputs]

    @property
    def output(self):
        return _value(self._core.output)

    @property
    def uniforms(self):
        return [_value(d) for d in self._core.uniforms]

    def run(self, inputs=None, uniforms=None, backend="vulkan", batch=None, seed=0,
            schedule=None, threads=0, max_steps=10_000_000, stack_depth=None, progress=True):
        """Runs the entry function once per lane. `inputs`: name -> array [lanes, ...] (a dict
        of fields for a struct); `uniforms`: name -> array in the uniform's shape. `backend`:
        "vulkan", "vm", "interp" or "auto" (Vulkan on a GPU, else the vm). Wrong dtypes
        or shapes raise ValueError naming the input and the expected shape. A run longer than a
        second says so on stderr every 10 s (progress=False: never)."""
        raw = self._core.run(dict(inputs or {}), dict(uniforms or {}), backend, batch, seed,
                             schedule or "", threads, max_steps, stack_depth, progress)
        return Result(raw)


_SUMMARY_COLUMNS = ["mean", "sd", "mcse_mean", "q5", "q50", "q95", "rhat", "ess_bulk",
                    "ess_tail"]


class Fit:
    """A sampled model: `draws` [chains, draws, D] (the model's space, NaN where a chain faulted
    or was stopped), `stats` (per-draw lp, accept_stat, step_size, tree_depth, n_leapfrog (also
    n_grad), divergent, energy, each [chains, draws]), `parameter_names`, `warnings`."""

    def __init__(self, core, model_name, model_file="<model>"):
        self._core = core
        self.model_name = model_name
        self.model_file = model_file
        self.draws = core.draws
        self.stats = core.stats
        self.parameter_names = list(core.parameter_names)
        self.warnings = [message for _, message in core.warnings]
        self.chain_messages = list(core.chain_messages)
        self.step_sizes = np.array(core.step_sizes)
        self.inv_metrics = core.inv_metrics
        self.gradient_evaluations = core.gradient_evaluations
        self.divergences = core.divergences

    def summary(self):
        """The CLI's table per parameter: a pandas DataFrame indexed by name when pandas is
        installed, else a dict of arrays (with "name")."""
        rows = self._core.summary_rows
        table = {"name": np.array([r[0] for r in rows])}
        for i, column in enumerate(_SUMMARY_COLUMNS):
            table[column] = np.array([r[i + 1] for r in rows], dtype=np.float64)
        try:
            import pandas
        except ImportError:
            return table
        return pandas.DataFrame({c: table[c] for c in _SUMMARY_COLUMNS}, index=table["name"])

    def summary_text(self):
        """The summary as `autobatch sample` prints it."""
        return self._core.summary_table

    def to_csv(self, folder):
        """Writes one CmdStan CSV per chain, FOLDER/MODEL-CHAIN.csv (chain from 1), as one set (the
        library's writer, as `autobatch sample --csv`: all of them or none); returns the paths."""
        self._core.write_files(os.fspath(folder), self.model_file, self.model_name, npy=False,
                               csv=True)
        return [os.path.join(folder, "%s-%d.csv" % (self.model_name, chain + 1))
                for chain in range(self.draws.shape[0])]

    def save(self, folder, csv=False):
        """Writes the fit's files as `autobatch sample --out FOLDER [--csv]` does: draws.npy, the
        per-draw statistics, summary.json (and with `csv` one CmdStan CSV per chain), as one set
        that replaces an earlier fit's in FOLDER (docs/cli.md, "What a fit leaves"); returns the
        paths."""
        self._core.write_files(os.fspath(folder), self.model_file, self.model_name, npy=True,
                               csv=csv)
        with open(os.path.join(folder, "summary.json")) as f:
            import json
            return [os.path.join(folder, name) for name in json.load(f)["files"]]

    def __repr__(self):
        return "Fit(chains=%d, draws=%d, parameters=%s)" % (
            self.draws.shape[0], self.draws.shape[1], self.parameter_names)


def _init_array(init, fields, chains):
    """init as [chains, D] float32: an array, or a dict of parameters by name (one for every
    chain) or a list of such dicts (one per chain), as CmdStan's init files."""
    if init is None:
        return None
    if isinstance(init, dict):
        init = [init] * chains
    if isinstance(init, (list, tuple)) and init and isinstance(init[0], dict):
        if len(init) != chains:
            raise ValueError("init: %d dicts for %d chains" % (len(init), chains))
        rows = []
        names = [name for name, _ in fields]
        for d in init:
            unknown = set(d) - set(names)
            if unknown:
                raise ValueError("init: unknown parameter '%s' (the model's: %s)" %
                                 (sorted(unknown)[0], ", ".join(names)))
            row = []
            for name, shape in fields:
                if name not in d:
                    raise ValueError("init: no value for '%s'" % name)
                value = np.asarray(d[name], dtype=np.float32)
                if value.shape != tuple(shape):
                    raise ValueError("init: '%s' has shape %s: expected %s" %
                                     (name, value.shape, tuple(shape)))
                row.extend(value.ravel().tolist())
            rows.append(row)
        return np.array(rows, dtype=np.float32)
    return np.asarray(init, dtype=np.float32)


def _model_source(model):
    """(source, file name for messages, model name). `model` is a path (an os.PathLike, or a
    string with neither a newline nor a '{', which every model's source has: its log_density's
    body) or the source text. A path that names no file raises FileNotFoundError naming it."""
    if isinstance(model, os.PathLike) or ("\n" not in model and "{" not in model):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError("no such model file: '%s' (a model is a .ab path or its "
                                    "source text)" % path)
        with open(path) as f:
            source = f.read()
        return source, path, os.path.splitext(os.path.basename(path))[0]
    return model, "<model>", "model"


def _device_list(devices):
    """`devices` as the library takes it: "" for one device, "all", or "0,1"."""
    if devices is None:
        return ""
    if isinstance(devices, str):
        return devices
    return ",".join(str(int(d)) for d in devices)


def _numbers(data):
    """The plain numbers in `data` (Python or numpy scalars, 0-d arrays; not bools), as the values
    of a program's `const N: int = data;`: the compile checks each against its constant's type."""
    out = {}
    for name, value in data.items():
        if isinstance(value, (bool, np.bool_)) or isinstance(value, dict):
            continue
        a = np.asarray(value) if np.isscalar(value) or isinstance(value, np.ndarray) else None
        if a is not None and a.ndim == 0 and a.dtype.kind in "iuf":
            out[str(name)] = float(a)
    return out


def sample(model, data=None, chains=4, draws=1000, warmup=1000, seed=0, backend="auto",
           init=None, leaf_steps=1, max_depth=10, target_accept=0.8, step_size=1.0,
           adapt_metric=True, search_step=True, step_jitter=0.0, threads=0, max_steps=2**32 - 1, stack_depth=0,
           schedule=None, progress=True, devices=None):
    """Batched NUTS on `model` (a .ab path, i.e. an os.PathLike or a string with neither a
    newline nor a '{', or else the source text; docs/nuts.md for the contract) with
    its uniforms from `data` (name -> array). One lane per chain. Returns a Fit; a faulted or
    refused chain and each of Stan's warnings (divergences, R-hat, ...) is also a
    RuntimeWarning. `devices`: None (one device), "all", or a list of device indices (as
    `autobatch devices` lists them): the chains are cut into one contiguous shard per device,
    each run on its own thread, and the fit is bit for bit the one a single device gives; a
    device that fails has its chains reported faulted (shard_failed). Implies the vulkan
    backend."""
    source, file, name = _model_source(model)
    options = _core.SampleOptions()
    options.chains, options.draws, options.warmup, options.seed = chains, draws, warmup, seed
    options.leaf_steps, options.max_depth = leaf_steps, max_depth
    options.target_accept, options.step_size = target_accept, step_size
    options.adapt_metric, options.search_step = adapt_metric, search_step
    options.step_jitter = step_jitter
    options.threads, options.max_steps, options.stack_depth = threads, max_steps, stack_depth
    data = dict(data or {})
    compiled = _core.SamplerModel.compile(source, file, _numbers(data))
    # A number that no uniform takes is a data constant's value (or unused, as in --data's JSON).
    uniforms = {d["name"] for d in compiled.data}
    data = {k: v for k, v in data.items() if k in uniforms or k not in _numbers(data)}
    core = _core.sample(compiled, data, options, backend, schedule or "",
                        _init_array(init, compiled.fields, chains), progress,
                        _device_list(devices))
    fit = Fit(core, name, file)
    # What the CLI prints on stderr after a fit: faulted or refused chains, Stan's checks.
    for message in fit.chain_messages + fit.warnings:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return fit

