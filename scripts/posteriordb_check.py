#!/usr/bin/python3
"""posteriordb's reference posteriors as the sampler's test suite (issue 45; docs/nuts.md,
"posteriordb: the reference check").

For each posterior ported to samples/models/posteriordb/NAME.ab, samples it with
`autobatch sample --data samples/data/posteriordb/NAME/data.json` and compares every parameter of
posteriordb's reference summary (10 chains x 1000 draws made with Stan) with ours:

  * the mean within 5 Monte Carlo standard errors, ours and the reference's combined:
    |z| = |mean - ref_mean| / sqrt(mcse^2 + ref_sd^2 / 10000) < 5. Our MCSE is sd / sqrt(ESS)
    (Stan's ESS of the mean, Vehtari et al. 2021); the reference's draws are thinned to be
    nearly independent (posteriordb's rule for reference posteriors), so its MCSE is sd / sqrt(n);
  * the sd within 15%: |sd / ref_sd - 1| <= 0.15.

It prints a table (posterior, D, parameters, worst |z|, worst sd ratio, ESS per gradient,
Stan's with --stan) and exits 1 if any posterior fails. --lines checks instead that no port is
longer than its Stan original (lines of the parameters, transformed parameters and model blocks
against the port's Params struct and functions, blank and comment lines not counted).

--backend vulkan runs the sampler on the Vulkan engine (lavapipe on a machine without a GPU);
--same-as-vm then samples each posterior on the vm too, with the same options, and fails it unless
the two runs' draws and per-draw statistics are the same bits (the strongest check: the vm's
results carry over). --max-dim D leaves out the posteriors with more than D parameters.

Every reference parameter is a column of its port (Stan's transformed parameters through `fn
transformed`), under Stan's 1-based names.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "samples", "models", "posteriordb")
DATA = os.path.join(ROOT, "samples", "data", "posteriordb")
REFERENCE_DRAWS = 10000  # 10 chains x 1000, thinned to near independence by posteriordb


# Posteriors not ported, and why.
NOT_PORTED = {}


def stan_name(ours):
    """theta[0][1] -> theta[1,2]: Stan's 1-based names of our 0-based coordinates."""
    base = ours.split("[", 1)[0]
    idx = [int(i) + 1 for i in re.findall(r"\[(\d+)\]", ours)]
    return base if not idx else f"{base}[{','.join(map(str, idx))}]"


# ---- ESS (Vehtari, Gelman, Simpson, Carpenter, Bürkner 2021), as Stan and our summary ---------

def _autocovariance(x):
    n = len(x)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(x - x.mean(), size)
    acov = np.fft.irfft(f * np.conj(f), size)[:n] / n
    return acov


def ess(draws):
    """Effective sample size of [chains, draws] by split chains and Geyer's initial monotone
    sequence (Stan's ess)."""
    chains, n = draws.shape
    half = n // 2
    x = np.concatenate([draws[:, :half], draws[:, n - half:]], axis=0)
    m, n = x.shape
    if not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return float("nan")
    acov = np.array([_autocovariance(row) for row in x])
    chain_mean = x.mean(axis=1)
    chain_var = acov[:, 0] * n / (n - 1)
    w = chain_var.mean()
    var_plus = w * (n - 1) / n + (chain_mean.var(ddof=1) if m > 1 else 0)
    rho = 1 - (w - acov.mean(axis=0) * n / (n - 1)) / var_plus
    rho[0] = 1
    # Geyer: sums of pairs, positive then monotone.
    t = 0
    pairs = []
    while t + 1 < n:
        p = rho[t] + rho[t + 1]
        if p < 0:
            break
        pairs.append(p)
        t += 2
    for i in range(1, len(pairs)):
        pairs[i] = min(pairs[i], pairs[i - 1])
    tau = -1 + 2 * sum(pairs)
    tau = max(tau, 1 / np.log10(m * n))
    return m * n / tau


def bulk_ess(draws):
    from scipy.stats import norm, rankdata
    flat = rankdata(draws, method="average").reshape(draws.shape)
    z = norm.ppf((flat - 3 / 8) / (flat.size + 1 / 4))
    return ess(z)


# ---- running one posterior -------------------------------------------------------------------

def sample_command(autobatch, name, args, backend, out):
    return [autobatch, "sample", os.path.join(MODELS, name + ".ab"),
            "--data", os.path.join(DATA, name, "data.json"),
            "--chains", str(args.chains), "--warmup", str(args.warmup), "--draws", str(args.draws),
            "--seed", str(args.seed), "--backend", backend, "--out", out, "--format", "json"]


# What a run writes per draw: equal bits on two backends means the same fit.
PER_DRAW_FILES = ["draws.npy", "n_grad.npy", "lp.npy", "accept_stat.npy", "step_size.npy",
                  "tree_depth.npy", "divergent.npy", "energy.npy"]


def differences_from_vm(autobatch, name, args, out):
    """The per-draw files in which the vm's run with the same options differs from `out`'s."""
    with tempfile.TemporaryDirectory(prefix="pdb_vm_") as vm_out:
        cmd = sample_command(autobatch, name, args, "vm", vm_out)
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}:\n{run.stderr}")
        return [f for f in PER_DRAW_FILES
                if open(os.path.join(out, f), "rb").read() !=
                open(os.path.join(vm_out, f), "rb").read()]


def dimension(autobatch, name):
    """The port's number of parameters (one vm draw: milliseconds)."""
    with tempfile.TemporaryDirectory(prefix="pdb_dim_") as out:
        one = argparse.Namespace(chains=1, warmup=0, draws=1, seed=1)
        cmd = sample_command(autobatch, name, one, "vm", out)
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}:\n{run.stderr}")
        return len(json.load(open(os.path.join(out, "summary.json")))["parameters"])


def sample(autobatch, name, args, out):
    cmd = sample_command(autobatch, name, args, args.backend, out)
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {run.returncode}:\n{run.stderr}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    draws = np.load(os.path.join(out, "draws.npy")).astype(np.float64)
    n_grad = np.load(os.path.join(out, "n_grad.npy"))
    return summary, draws, n_grad


def check(autobatch, name, args):
    reference = json.load(open(os.path.join(DATA, name, "reference.json")))["parameters"]
    with tempfile.TemporaryDirectory(prefix="pdb_") as out:
        started = time.monotonic()
        summary, draws, n_grad = sample(autobatch, name, args, out)
        seconds = time.monotonic() - started
        differs = (differences_from_vm(autobatch, name, args, out)
                   if args.same_as_vm and args.backend != "vm" else None)
    names = [p["name"] for p in summary["parameters"]]
    kept = [c for c in range(draws.shape[0]) if np.all(np.isfinite(draws[c]))]
    columns = {n: draws[kept, :, i] for i, n in enumerate(names)}
    by_stan = {stan_name(n): columns[n] for n in names}
    # The ESS here must be the sampler's own (sampler/summary.h) where both exist; they differ by
    # a few percent where the ESS exceeds the draws (antithetic chains: 5562 against 5412 on
    # hmm_drive_0's phi_gap over 4000 draws; 2154 against 2004 on eight schools' theta_trans[7]
    # over 16 x 100), so only an ESS below the draws is compared.
    for p in summary["parameters"]:
        if p["ess_bulk"] >= len(kept) * draws.shape[1]:
            continue
        ours = bulk_ess(columns[p["name"]])
        if abs(ours - p["ess_bulk"]) > 0.05 * p["ess_bulk"] + 1:
            raise RuntimeError(f"{name}: this script's bulk ESS of {p['name']} is {ours:.1f}, the "
                               f"sampler's summary says {p['ess_bulk']:.1f}")
    rows = []
    for ref_name, ref in reference.items():
        if ref_name not in by_stan:
            raise RuntimeError(f"{name}: the reference's {ref_name} is not among the port's "
                               f"columns ({', '.join(names)})")
        x = by_stan[ref_name]
        e = ess(x)
        mcse = x.std(ddof=1) / np.sqrt(e)
        se = np.sqrt(mcse ** 2 + ref["sd"] ** 2 / REFERENCE_DRAWS)
        rows.append({"name": ref_name, "z": (x.mean() - ref["mean"]) / se,
                     "sd_ratio": x.std(ddof=1) / ref["sd"], "bulk_ess": bulk_ess(x)})
    gradients = int(n_grad[kept].sum())
    worst_z = max(rows, key=lambda r: abs(r["z"]))
    worst_sd = max(rows, key=lambda r: abs(r["sd_ratio"] - 1))
    min_ess = min(r["bulk_ess"] for r in rows)
    passed = (abs(worst_z["z"]) < args.z and abs(worst_sd["sd_ratio"] - 1) <= args.sd and
              len(kept) * 2 > args.chains and not differs)
    return {"posterior": name, "D": len(names), "parameters": len(rows), "worst_z": worst_z,
            "worst_sd": worst_sd, "ess_per_grad": min_ess / gradients if gradients else 0,
            "chains_kept": len(kept), "faults": [f.get("detail", f.get("message", ""))
                                                 for f in summary.get("faults", [])],
            "divergences": summary.get("divergences"), "passed": passed, "rows": rows,
            "seconds": seconds, "compile_seconds": summary.get("compile_seconds"),
            "differs_from_vm": differs}


def stan_ess_per_grad(name, args, reference_names):
    d = os.path.join(DATA, name)
    cmd = ["Rscript", os.path.join(ROOT, "scripts", "posteriordb_stan.R"),
           os.path.join(d, "model.stan"), os.path.join(d, "data.json"), str(args.chains),
           str(args.warmup), str(args.draws), str(args.seed), args.stan_cache,
           ",".join(reference_names)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"stan_result gradients=(\d+) min_bulk_ess=([\d.]+)", run.stdout)
    if not m:
        return None
    return float(m.group(2)) / int(m.group(1))


# ---- lines: no port longer than its Stan original --------------------------------------------

def stan_lines(text):
    """Lines of the parameters, transformed parameters and model blocks, comments and blank
    lines left out."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = [re.sub(r"//.*", "", l).strip() for l in text.splitlines()]
    count, depth, inside = 0, 0, False
    for line in lines:
        if not line:
            continue
        if depth == 0:
            inside = re.match(r"(transformed\s+parameters|parameters|model)\s*\{", line) is not None
        if inside:
            count += 1
        depth += line.count("{") - line.count("}")
    return count


def port_lines(text):
    """Lines of the port's structs and functions (its parameters and model), comments and blank
    lines left out; constants and uniforms are Stan's data block."""
    lines = [re.sub(r"//.*", "", l).strip() for l in text.splitlines()]
    count, depth = 0, 0
    for line in lines:
        if not line:
            continue
        if depth > 0 or line.startswith(("struct ", "fn ")):
            count += 1
        depth += line.count("{") - line.count("}")
    return count


def same_as_vm(result):
    differs = result["differs_from_vm"]
    if differs is None:
        return "(is vm)"
    return "yes" if not differs else "NO: " + ",".join(differs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--autobatch", default=os.path.join(ROOT, "build", "autobatch"))
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--backend", default="vm", help="autobatch sample's --backend (vm, vulkan)")
    p.add_argument("--same-as-vm", action="store_true",
                   help="also sample on the vm and fail a posterior whose draws or per-draw "
                        "statistics differ from it in any bit")
    p.add_argument("--max-dim", type=int, help="only the posteriors with at most this many "
                   "parameters")
    p.add_argument("--z", type=float, default=5.0, help="largest |z| of a mean")
    p.add_argument("--sd", type=float, default=0.15, help="largest relative error of an sd")
    p.add_argument("--only", nargs="*", help="posteriors to check (default: every port)")
    p.add_argument("--skip", nargs="*", default=[], help="posteriors to leave out")
    p.add_argument("--stan", action="store_true", help="also Stan's ESS per gradient (rstan)")
    p.add_argument("--stan-cache", default=os.path.join(tempfile.gettempdir(), "ab_pdb_stan"))
    p.add_argument("--lines", action="store_true", help="check the ports' lengths instead")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()

    ported = sorted(f[:-3] for f in os.listdir(MODELS) if f.endswith(".ab"))
    names = [n for n in (args.only or ported) if n not in args.skip]
    if args.max_dim is not None and not args.lines:
        names = [n for n in names if dimension(args.autobatch, n) <= args.max_dim]
    failed = []
    if args.lines:
        print(f"{'posterior':42} {'port':>5} {'Stan':>5}")
        for name in names:
            ours = port_lines(open(os.path.join(MODELS, name + ".ab")).read())
            stan = stan_lines(open(os.path.join(DATA, name, "model.stan")).read())
            print(f"{name:42} {ours:5} {stan:5}{'' if ours <= stan else '  LONGER'}")
            if ours > stan:
                failed.append(name)
        return 1 if failed else 0

    header = (f"{'posterior':42} {'D':>3} {'params':>6} {'worst |z|':>16} {'worst sd ratio':>20} "
              f"{'ESS/grad':>9}" + (f" {'Stan':>7}" if args.stan else "") + f" {'wall s':>7}" +
              (" same as vm" if args.same_as_vm else "") + "  result")
    print(header)
    results = []
    for name in names:
        try:
            r = check(args.autobatch, name, args)
        except RuntimeError as e:
            print(f"{name:42} ERROR {e}")
            failed.append(name)
            continue
        if args.stan:
            r["stan_ess_per_grad"] = stan_ess_per_grad(name, args, [x["name"] for x in r["rows"]])
        results.append(r)
        wz, ws = r["worst_z"], r["worst_sd"]
        stan = r.get("stan_ess_per_grad")
        line = (f"{name:42} {r['D']:3} {r['parameters']:6} "
                f"{abs(wz['z']):5.2f} {wz['name']:>10} {ws['sd_ratio']:6.3f} {ws['name']:>13} "
                f"{r['ess_per_grad']:9.4f}" +
                ((f" {stan:7.4f}" if stan else "      - ") if args.stan else "") +
                f" {r['seconds']:7.1f}" + (f" {same_as_vm(r):>10}" if args.same_as_vm else "") +
                f"  {'pass' if r['passed'] else 'FAIL'}")
        if r["chains_kept"] < args.chains:
            line += f" ({args.chains - r['chains_kept']} chain(s) faulted: {r['faults'][0]})"
        print(line, flush=True)
        if not r["passed"]:
            failed.append(name)
    for name in sorted(NOT_PORTED):
        if not args.only:
            print(f"{name:42} not ported: {NOT_PORTED[name]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=float)
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
