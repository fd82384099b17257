"""autobatch.Module on the CPU backends: results equal the CLI's `run --format json` for the
samples; the interface's dtypes and shapes; bad sources, inputs and options raise the documented
errors; Ctrl-C (SIGINT) stops a long run with KeyboardInterrupt; two threads run at once."""

import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import autobatch
from conftest import read, sample_path

# (sample, CLI inputs, the same inputs as arrays, extra CLI args, extra run kwargs)
CASES = [
    ("fib.ab", ["--input", "n=range:0:20"], {"n": np.arange(20, dtype=np.int32)}, [], {}),
    ("ackermann.ab", ["--input", "m=0,1,2,3", "--input", "n=3,3,3,3"],
     {"m": np.array([0, 1, 2, 3]), "n": np.array([3, 3, 3, 3])}, [], {}),
    ("collatz.ab", ["--input", "n=range:1:30"], {"n": np.arange(1, 30)}, [], {}),
    ("divmod.ab", ["--input", "a=100,7,1000", "--input", "b=7,100,3"],
     {"a": np.array([100, 7, 1000]), "b": np.array([7, 100, 3])}, [], {}),
    ("even_odd.ab", ["--input", "n=range:0:10"], {"n": np.arange(10)}, [], {}),
    ("simpson.ab", ["--input", "a=0.0,0.0,1.0", "--input", "b=1.0,3.0,4.0"],
     {"a": np.array([0.0, 0.0, 1.0], dtype=np.float32),
      "b": np.array([1.0, 3.0, 4.0], dtype=np.float32)}, [], {}),
    ("random.ab", ["--batch", "8", "--input", "barrier=3.0", "--input", "max_steps=1000",
                   "--seed", "7"],
     {"barrier": np.full(8, 3.0, dtype=np.float32), "max_steps": np.full(8, 1000)},
     [], {"seed": 7}),
    ("faults.ab", ["--input", "kind=range:0:6", "--input", "x=7", "--max-steps", "10000"],
     {"kind": np.arange(6), "x": np.full(6, 7)}, [], {"max_steps": 10000}),
]


@pytest.mark.parametrize("backend", ["vm", "interp"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_results_equal_the_cli(cli, case, backend):
    name, cli_inputs, inputs, cli_extra, kwargs = case
    path = sample_path(name)
    want = cli(["run", path, "--backend", backend] + cli_inputs + cli_extra)
    module = autobatch.Module.compile(read(path), file=path)
    got = module.run(inputs=inputs, backend=backend, **kwargs)
    faulted = {f["lane"] for f in got.faults}
    assert sorted(faulted) == sorted(e["lane"] for e in want["errors"])
    for f, e in zip(got.faults, want["errors"]):
        assert (f["code"], f["function"], f["line"], f["step"], f["detail"]) == (
            e["code"], e["function"], e["line"], e["step"], e["detail"])
    assert sorted(got.outputs) == sorted(want["outputs"])
    for key, values in want["outputs"].items():
        array = got.outputs[key]
        assert array.shape[0] == len(values)
        for lane, value in enumerate(values):
            if lane in faulted:
                assert value is None
                continue
            if isinstance(value, float) or array.dtype == np.float32:
                assert np.float32(value) == array[lane]
            else:
                assert value == array[lane].tolist()
    assert got.statistics["lanes"] == len(next(iter(want["outputs"].values())))


def test_interface_dtypes_and_shapes():
    module = autobatch.Module.compile(read(sample_path("merge_sort.ab")), file="merge_sort.ab")
    values, count = module.inputs
    assert (values.name, values.dtype, values.shape) == ("values", np.int32, (16,))
    assert (count.name, count.dtype, count.shape) == ("count", np.int32, ())
    assert module.output.shape == (16,)
    divmod_ = autobatch.Module.compile(read(sample_path("divmod.ab")))
    assert divmod_.output.dtype is None and set(divmod_.output.fields) == {"q", "r"}
    table = autobatch.Module.compile(read(sample_path("table_lookup.ab")))
    assert [(u.name, u.dtype, u.shape) for u in table.uniforms] == [
        ("knots", np.float32, (16,)), ("values", np.float32, (16,))]


def test_uniforms_and_array_inputs():
    table = autobatch.Module.compile(read(sample_path("table_lookup.ab")))
    knots = np.arange(16, dtype=np.float32)
    x = np.array([0.5, 2.25, 7.0], dtype=np.float32)
    got = table.run(inputs={"x": x}, uniforms={"knots": knots, "values": knots * 2},
                    backend="vm").outputs["result"]
    np.testing.assert_allclose(got, x * 2, rtol=1e-6)
    sort = autobatch.Module.compile(read(sample_path("merge_sort.ab")))
    rows = np.random.default_rng(1).integers(-100, 100, size=(5, 16)).astype(np.int32)
    got = sort.run(inputs={"values": rows, "count": np.full(5, 16)}, backend="interp")
    np.testing.assert_array_equal(got.outputs["result"], np.sort(rows, axis=1))


PAIRS = """
struct P { a: int, b: float[2] }
struct Out { ps: P[3], total: int }
fn main(ps: P[3], k: int) -> Out {
    var out = ps;
    var total = 0;
    for i in 0..3 {
        out[i] = P { a: ps[i].a * k, b: [ps[i].b[1], ps[i].b[0] + 1.0] };
        total += ps[i].a;
    }
    return Out { ps: out, total: total };
}
"""


@pytest.mark.parametrize("backend", ["vm", "interp"])
def test_arrays_of_structs_are_arrays_per_field(backend):
    module = autobatch.Module.compile(PAIRS)
    assert module.inputs[0].fields == {"a": (np.int32, (3,)), "b": (np.float32, (3, 2))}
    assert set(module.output.fields) == {"ps.a", "ps.b", "total"}
    a = np.arange(12, dtype=np.int32).reshape(4, 3)
    b = np.random.default_rng(2).random((4, 3, 2), dtype=np.float32)
    got = module.run(inputs={"ps": {"a": a, "b": b}, "k": np.array([1, 2, 3, 4])},
                     backend=backend).outputs
    np.testing.assert_array_equal(got["ps.a"], a * np.array([1, 2, 3, 4])[:, None])
    np.testing.assert_array_equal(got["ps.b"][:, :, 0], b[:, :, 1])
    np.testing.assert_array_equal(got["ps.b"][:, :, 1], b[:, :, 0] + np.float32(1.0))
    np.testing.assert_array_equal(got["total"], a.sum(axis=1))
    with pytest.raises(ValueError, match=r"input 'ps' field 'b' has shape \(4, 2, 3\)"):
        module.run(inputs={"ps": {"a": a, "b": b.transpose(0, 2, 1)}, "k": np.ones(4)},
                   backend=backend)


EMITS = """
struct Step { i: int, x: float }
fn main(n: int) -> int {
    for i in 0..n { emit(Step { i: i, x: 0.5 * float(i) }); }
    return n;
}
"""


def test_emitted_records_equal_the_cli(cli, tmp_path):
    path = tmp_path / "emits.ab"
    path.write_text(EMITS)
    want = cli(["run", str(path), "--backend", "vm", "--input", "n=0,3,1"])
    got = autobatch.Module.compile(EMITS).run(inputs={"n": np.array([0, 3, 1])}, backend="vm")
    assert sorted(got.emitted) == sorted(want["emitted"]) == ["i", "x"]
    for key, lanes in want["emitted"].items():
        assert [a.tolist() for a in got.emitted[key]] == lanes
    assert got.emitted["x"][1].dtype == np.float32


def test_compile_error_has_place_and_caret():
    with pytest.raises(autobatch.CompileError) as error:
        autobatch.Module.compile("fn main(n: int) -> int {\n    return n + true;\n}\n",
                                 file="bad.ab")
    message = str(error.value)
    assert message.startswith("bad.ab:2:")
    assert "^" in message
    assert isinstance(error.value, ValueError)


def test_bad_inputs_raise_value_error_naming_the_input():
    fib = autobatch.Module.compile(read(sample_path("fib.ab")))
    with pytest.raises(ValueError, match=r"input 'n' has dtype float64: expected int \(int32\) "
                                         r"with shape \(4,\)"):
        fib.run(inputs={"n": np.zeros(4)}, backend="vm")
    with pytest.raises(ValueError, match=r"input 'n' has shape \(4, 2\): expected int \(int32\) "
                                         r"with shape \(4,\)"):
        fib.run(inputs={"n": np.zeros((4, 2), dtype=np.int32)}, backend="vm")
    with pytest.raises(ValueError, match="input 'n' .* has no value"):
        fib.run(inputs={}, backend="vm")
    with pytest.raises(ValueError, match="unknown input 'm'"):
        fib.run(inputs={"n": np.arange(3), "m": np.arange(3)}, backend="vm")
    with pytest.raises(ValueError, match="out of range for int"):
        fib.run(inputs={"n": np.array([2**40])}, backend="vm")
    with pytest.raises(ValueError, match="backend must be"):
        fib.run(inputs={"n": np.arange(3)}, backend="cuda")
    with pytest.raises(ValueError, match="needs a leading dimension"):
        fib.run(inputs={"n": np.int32(3)}, backend="vm")
    table = autobatch.Module.compile(read(sample_path("table_lookup.ab")))
    with pytest.raises(ValueError, match=r"uniform 'knots' has shape \(15,\)"):
        table.run(inputs={"x": np.zeros(2, np.float32)},
                  uniforms={"knots": np.zeros(15, np.float32), "values": np.zeros(16, np.float32)},
                  backend="vm")
    with pytest.raises(ValueError, match="uniform 'values' .* has no value"):
        table.run(inputs={"x": np.zeros(2, np.float32)},
                  uniforms={"knots": np.zeros(16, np.float32)}, backend="vm")
    # A stack depth the engine refuses is its message, raised, not a crash.
    with pytest.raises(RuntimeError, match="stack depth must be at least 1"):
        fib.run(inputs={"n": np.arange(3)}, backend="vm", stack_depth=0)


def test_faults_are_per_lane():
    faults = autobatch.Module.compile(read(sample_path("faults.ab")), file="faults.ab")
    got = faults.run(inputs={"kind": np.arange(6), "x": np.full(6, 7)}, backend="vm",
                     max_steps=10000)
    codes = {f["lane"]: f["code"] for f in got.faults}
    assert set(codes.values()) >= {"stack_overflow", "step_budget"}
    assert 0 not in codes  # kind 0 returns normally: the other lanes' faults do not stop it


SPIN = """
fn spin(n: int) -> int {
    var total = 0;
    var i = 0;
    while i < n { total = total + i % 7; i = i + 1; }
    return total;
}
fn main(n: int) -> int { return spin(n); }
"""


def test_ctrl_c_stops_a_long_run_with_keyboard_interrupt():
    module = autobatch.Module.compile(SPIN)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            module.run(inputs={"n": np.full(64, 2_000_000_000)}, backend="vm",
                       max_steps=2**62, threads=1)
    finally:
        timer.cancel()


def test_two_threads_run_at_once():
    fib = autobatch.Module.compile(read(sample_path("fib.ab")))
    want = fib.run(inputs={"n": np.arange(18)}, backend="interp").outputs["result"]
    results = [None, None]

    def work(k):
        results[k] = fib.run(inputs={"n": np.arange(18)}, backend="vm", threads=1)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r.outputs["result"], want)


def test_auto_backend_is_accepted():
    # "auto", as the CLI's sample chooses: Vulkan on a GPU, else the vm; the results are the same.
    fib = autobatch.Module.compile(read(sample_path("fib.ab")))
    n = {"n": np.arange(12, dtype=np.int32)}
    np.testing.assert_array_equal(fib.run(inputs=n, backend="auto").outputs["result"],
                                  fib.run(inputs=n, backend="vm").outputs["result"])


def test_float64_beyond_float_is_refused():
    # Rounded to float32 it would be infinity; the CLI refuses it as out of range too.
    simpson = autobatch.Module.compile(read(sample_path("simpson.ab")))
    with pytest.raises(ValueError, match=r"input 'a' holds 1e\+39, out of range for float"):
        simpson.run(inputs={"a": np.array([0.0, 1e39]), "b": np.ones(2)}, backend="vm")
    with pytest.raises(ValueError, match=r"input 'b' holds -3.5e\+38, out of range for float"):
        simpson.run(inputs={"a": np.zeros(1), "b": np.array([-3.5e38])}, backend="vm")
    # Infinity and NaN are floats; the largest float64 that rounds to a finite float32 is taken.
    got = simpson.run(inputs={"a": np.zeros(2), "b": np.array([np.inf, 1.0])}, backend="vm")
    assert got.outputs["result"].shape == (2,)


def test_an_unknown_struct_field_is_refused():
    module = autobatch.Module.compile(PAIRS)
    a = np.zeros((2, 3), dtype=np.int32)
    b = np.zeros((2, 3, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"input 'ps' has an unknown field 'bb' "
                                         r"\(P's fields: a, b\)"):
        module.run(inputs={"ps": {"a": a, "b": b, "bb": b}, "k": np.ones(2)}, backend="vm")


def test_max_steps_zero_is_refused():
    fib = autobatch.Module.compile(read(sample_path("fib.ab")))
    with pytest.raises(RuntimeError, match="max_steps must be at least 1"):
        fib.run(inputs={"n": np.arange(3)}, backend="vm", max_steps=0)


EXIT_DURING_A_RUN = """
import sys, threading, time
import numpy as np
import autobatch
spin = autobatch.Module.compile(sys.argv[1])
started = threading.Event()
def work():
    started.set()
    if sys.argv[2] == "run":
        spin.run(inputs={"n": np.full(64, 2_000_000_000)}, backend="vm", max_steps=2**62,
                 threads=1, progress=False)
    else:
        autobatch.sample("fn log_density(q: float[2]) -> float { return -q[0] * q[0]; }",
                         chains=2, draws=1_000_000, backend="vm", threads=1, progress=False)
threading.Thread(target=work, daemon=True).start()
started.wait()
time.sleep(0.5)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("call", ["run", "sample"])
def test_the_interpreter_exits_cleanly_while_a_thread_runs(call):
    # A daemon thread inside a long run when the interpreter exits: the run is stopped and the
    # exit waits for it (it used to abort: "terminate called without an active exception", 134).
    done = subprocess.run([sys.executable, "-c", EXIT_DURING_A_RUN, SPIN, call],
                          capture_output=True, text=True, timeout=60)
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout == "exiting\n"


def test_transformed_data_computed_from_the_uniforms():
    """Issue 45: a uniform with an initializer is computed from the others when they are bound
    (the inline expression's bits), and binding it by hand is refused."""
    derived = autobatch.Module.compile(
        "uniform x: float[3];\nuniform lx: float[3] = log(x) * 2.0;\n"
        "fn main(a: float) -> float { return a * lx[0] + lx[2]; }\n", file="f.ab")
    inline = autobatch.Module.compile(
        "uniform x: float[3];\n"
        "fn main(a: float) -> float { let lx = log(x) * 2.0; return a * lx[0] + lx[2]; }\n")
    a = np.linspace(-2, 2, 9).astype(np.float32)
    x = np.array([0.5, 1.5, 7.0], np.float32)
    for backend in ("interp", "vm"):
        got = derived.run(inputs={"a": a}, uniforms={"x": x}, backend=backend)
        want = inline.run(inputs={"a": a}, uniforms={"x": x}, backend=backend)
        assert got.outputs["result"].tobytes() == want.outputs["result"].tobytes()
    with pytest.raises(ValueError, match=r"'lx' is computed from the data \(transformed data at "
                                         r"f.ab:2:9\); it cannot be bound"):
        derived.run(inputs={"a": a}, uniforms={"x": x, "lx": x}, backend="vm")
    with pytest.raises(ValueError, match="transformed data 'lx' is NaN at element 0"):
        derived.run(inputs={"a": a}, uniforms={"x": -x}, backend="vm")
