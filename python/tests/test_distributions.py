"""Stan's distributions (docs/language.md, "Distributions") against scipy.stats in float64.

Log densities: every distribution over a grid of arguments that reaches into the tails, run on
the vm (every backend gives the same bits: tests/ir/backends_test.cpp and the samples' tests).
The error is measured in float32 ulps of max(|log density|, 1): relative where the log density
is large, absolute (in units of 2^-23) near zero, where a log density is a difference of terms
that float32 can only round. Each distribution's maximum must stay within its bound here, the
table docs/language.md gives. Run this file with python3 to print the measured table.

Random draws: 20,000 draws per distribution against scipy's cdf (Kolmogorov-Smirnov) or pmf
(a chi-square test over the bins with at least 5 expected draws); the seed is fixed, so the
p-values are too.
"""

import os
import sys

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
from scipy import special, stats  # noqa: E402

import autobatch  # noqa: E402

F32 = np.float32


def geom(lo, hi, n):
    return np.geomspace(lo, hi, n)


# name -> (argument names and kinds ("f" float, "i" int), grid: list of argument tuples,
#          the float64 reference log density on float64 arrays of the float32 arguments)
def location_scale(ts, mus=(-3.0, 0.0, 2.5), sigmas=(0.01, 0.3, 1.0, 7.0, 1000.0)):
    return [(mu + s * t, mu, s) for mu in mus for s in sigmas for t in ts]


T_WIDE = np.concatenate([[-1e3, -100.0], np.linspace(-40, 40, 81), [100.0, 1e3]])
T_NEAR = np.linspace(-6, 6, 49)

DENSITIES = {
    "normal_lpdf": ("fff", location_scale(T_WIDE), lambda y, m, s: stats.norm.logpdf(y, m, s)),
    "std_normal_lpdf": ("f", [(t,) for t in T_WIDE], lambda y: stats.norm.logpdf(y)),
    "student_t_lpdf": (
        "ffff",
        [(y, nu, m, s) for nu in (0.5, 1.0, 3.7, 30.0, 1e4) for (y, m, s) in
         location_scale(T_WIDE, (-3.0, 2.5), (0.3, 1.0, 1000.0))],
        lambda y, nu, m, s: stats.t.logpdf(y, nu, m, s)),
    "cauchy_lpdf": ("fff", location_scale(T_WIDE), lambda y, m, s: stats.cauchy.logpdf(y, m, s)),
    # scipy's laplace.logpdf underflows to -inf beyond |y - mu| / sigma ~ 745: its formula.
    "double_exponential_lpdf": ("fff", location_scale(T_WIDE),
                                lambda y, m, s: -np.log(2 * s) - np.abs(y - m) / s),
    "logistic_lpdf": ("fff", location_scale(T_WIDE),
                      lambda y, m, s: stats.logistic.logpdf(y, m, s)),
    "lognormal_lpdf": (
        "fff",
        [(np.exp(m + s * t), m, s) for m in (-2.0, 0.0, 3.0) for s in (0.1, 1.0, 4.0)
         for t in np.linspace(-8, 8, 33) if abs(m + s * t) < 80],
        lambda y, m, s: stats.lognorm.logpdf(y, s, scale=np.exp(m))),
    "exponential_lpdf": (
        "ff", [(y, b) for b in (1e-3, 0.5, 1.0, 30.0) for y in np.concatenate([[0.0],
                                                                             geom(1e-6, 1e3, 28)])],
        lambda y, b: stats.expon.logpdf(y, scale=1 / b)),
    "gamma_lpdf": (
        "fff", [(y, a, b) for a in (0.1, 0.5, 1.0, 2.5, 30.0, 300.0) for b in (0.01, 1.0, 50.0)
                for y in geom(1e-6, 1e4, 41)],
        lambda y, a, b: stats.gamma.logpdf(y, a, scale=1 / b)),
    "inv_gamma_lpdf": (
        "fff", [(y, a, b) for a in (0.1, 0.5, 1.0, 2.5, 30.0, 300.0) for b in (0.01, 1.0, 50.0)
                for y in geom(1e-4, 1e4, 41)],
        lambda y, a, b: stats.invgamma.logpdf(y, a, scale=b)),
    "weibull_lpdf": (
        "fff", [(s * r, a, s) for a in (0.3, 1.0, 2.5, 10.0) for s in (0.1, 1.0, 10.0)
                for r in geom(1e-4, 30.0, 33)],
        lambda y, a, s: stats.weibull_min.logpdf(y, a, scale=s)),
    "beta_lpdf": (
        "fff", [(t, a, b) for a in (0.1, 0.5, 1.0, 2.5, 40.0) for b in (0.1, 1.0, 3.0, 40.0)
                for t in np.concatenate([[1e-6, 1e-3], np.linspace(0.02, 0.98, 25),
                                         [0.999, 1 - 2 ** -20]])],
        lambda t, a, b: stats.beta.logpdf(t, a, b)),
    "uniform_lpdf": (
        "fff", [(y, a, b) for a in (-3.0, 0.0) for b in (1.0, 10.0)
                for y in np.linspace(-5, 12, 35)],
        lambda y, a, b: stats.uniform.logpdf(y, a, b - a)),
    "chi_square_lpdf": (
        "ff", [(y, nu) for nu in (0.5, 1.0, 3.0, 30.0, 300.0) for y in geom(1e-5, 1e3, 41)],
        lambda y, nu: stats.chi2.logpdf(y, nu)),
    "bernoulli_lpmf": (
        "if", [(n, p) for n in (0, 1) for p in (0.0, 1e-6, 0.01, 0.3, 0.5, 0.9, 1 - 2 ** -20, 1.0)],
        lambda n, p: stats.bernoulli.logpmf(n, p)),
    "bernoulli_logit_lpmf": (
        "if", [(n, a) for n in (0, 1) for a in np.linspace(-50, 50, 41)],
        lambda n, a: np.where(n == 1, special.log_expit(a), special.log_expit(-a))),
    "binomial_lpmf": (
        "iif", [(n, N, p) for N in (0, 1, 5, 20, 100, 1000)
                for n in sorted({0, 1, N // 3, N // 2, N - 1, N} - {-1}) if 0 <= n <= N
                for p in (0.0, 0.001, 0.3, 0.5, 0.97, 1.0)],
        lambda n, N, p: stats.binom.logpmf(n, N, p)),
    "binomial_logit_lpmf": (
        "iif", [(n, N, a) for N in (0, 1, 5, 20, 100, 1000)
                for n in sorted({0, 1, N // 3, N // 2, N - 1, N}) if 0 <= n <= N
                for a in (-20.0, -3.0, 0.0, 1.5, 20.0)],
        lambda n, N, a: (special.gammaln(N + 1) - special.gammaln(n + 1)
                         - special.gammaln(N - n + 1) + n * special.log_expit(a)
                         + (N - n) * special.log_expit(-a))),
    "poisson_lpmf": (
        "if", [(n, lam) for n in (0, 1, 2, 5, 10, 50, 200, 1000, 10000)
               for lam in (1e-3, 0.5, 3.0, 40.0, 1000.0, 1e4)],
        lambda n, lam: stats.poisson.logpmf(n, lam)),
    "poisson_log_lpmf": (
        "if", [(n, a) for n in (0, 1, 2, 5, 10, 50, 200, 1000, 10000)
               for a in (-7.0, -0.7, 1.1, 3.7, 6.9, 9.2)],
        lambda n, a: stats.poisson.logpmf(n, np.exp(a))),
    "neg_binomial_2_lpmf": (
        "iff", [(n, mu, phi) for n in (0, 1, 3, 10, 100, 1000) for mu in (0.01, 1.0, 10.0, 1000.0)
                for phi in (0.1, 1.0, 10.0, 1000.0)],
        lambda n, mu, phi: stats.nbinom.logpmf(n, phi, phi / (mu + phi))),
    "neg_binomial_2_log_lpmf": (
        "iff", [(n, eta, phi) for n in (0, 1, 3, 10, 100, 1000) for eta in (-3.0, 0.0, 2.3, 7.0)
                for phi in (0.1, 1.0, 10.0, 1000.0)],
        lambda n, eta, phi: stats.nbinom.logpmf(n, phi, phi / (np.exp(eta) + phi))),
}

# The largest error each distribution may show, in ulps of max(|log density|, 1) (the table in
# docs/language.md gives the measured values).
BOUNDS = {
    "beta_lpdf": 75, "binomial_logit_lpmf": 70, "dirichlet_lpdf": 75, "binomial_lpmf": 70, "gamma_lpdf": 9,
    "inv_gamma_lpdf": 38, "lognormal_lpdf": 21, "neg_binomial_2_log_lpmf": 600,
    "neg_binomial_2_lpmf": 460, "weibull_lpdf": 13,
}


def program(name, kinds):
    params = ", ".join("a%d: %s" % (i, "int" if k == "i" else "float")
                       for i, k in enumerate(kinds))
    args = ["a%d" % i for i in range(len(kinds))]
    call = args[0] + (" | " + ", ".join(args[1:]) if len(args) > 1 else "")
    return "fn main(%s) -> float { return %s(%s); }\n" % (params, name, call)


def measure(name):
    """(max ulp error, the arguments where it is, lanes) of one density over its grid."""
    kinds, grid, reference = DENSITIES[name]
    columns = list(zip(*grid))
    inputs = {}
    as_float64 = []
    for i, (k, column) in enumerate(zip(kinds, columns)):
        if k == "i":
            inputs["a%d" % i] = np.array(column, dtype=np.int32)
            as_float64.append(np.array(column, dtype=np.float64))
        else:
            inputs["a%d" % i] = np.array(column, dtype=F32)
            as_float64.append(inputs["a%d" % i].astype(np.float64))
    module = autobatch.Module.compile(program(name, kinds))
    result = module.run(inputs=inputs, backend="vm", progress=False)
    assert result.faults == [], (name, result.faults[:3])
    ours = result.outputs["result"].astype(np.float64)
    with np.errstate(all="ignore"):
        want = np.asarray(reference(*as_float64), dtype=np.float64)
    assert np.array_equal(np.isneginf(ours), np.isneginf(want)), name
    finite = np.isfinite(want)
    assert np.all(np.isfinite(ours[finite])), name
    scale = np.spacing(np.maximum(np.abs(want[finite]), 1.0).astype(F32)).astype(np.float64)
    errors = np.abs(ours[finite] - want[finite]) / scale
    worst = int(np.argmax(errors))
    where = tuple(float(c[finite][worst]) for c in as_float64)
    return float(errors[worst]), where, len(grid)


@pytest.mark.parametrize("name", sorted(DENSITIES))
def test_density_matches_scipy(name):
    error, where, _ = measure(name)
    assert error <= BOUNDS.get(name, 8.0), (name, error, where)


def test_categorical_logit_matches_scipy():
    rng = np.random.default_rng(1)
    beta = (rng.standard_normal((400, 4)) * np.array([0.1, 1.0, 5.0, 30.0])).astype(F32)
    n = rng.integers(1, 5, size=400).astype(np.int32)
    module = autobatch.Module.compile(
        "fn main(n: int, beta: float[4]) -> float { return categorical_logit_lpmf(n | beta); }\n")
    ours = module.run(inputs={"n": n, "beta": beta}, backend="vm",
                      progress=False).outputs["result"].astype(np.float64)
    b = beta.astype(np.float64)
    want = b[np.arange(400), n - 1] - special.logsumexp(b, axis=1)
    scale = np.spacing(np.maximum(np.abs(want), 1.0).astype(F32)).astype(np.float64)
    assert np.max(np.abs(ours - want) / scale) <= BOUNDS.get("categorical_logit_lpmf", 8.0)


def dirichlet_error(k, lanes=600, seed=2):
    """Max ulp error of dirichlet_lpdf(theta | alpha) on float[k], alpha in [0.1, 40] (log-uniform)
    and theta a float32 simplex drawn from Dirichlet(alpha) (small alphas put elements near 0),
    against scipy's float64 formula on the float32 arguments (scipy.stats.dirichlet itself asks
    for a sum within 1e-9 of 1, which float32 elements do not meet)."""
    rng = np.random.default_rng(seed)
    alpha = np.exp(rng.uniform(np.log(0.1), np.log(40.0), (lanes, k))).astype(F32)
    theta = np.array([rng.dirichlet(a) for a in alpha.astype(np.float64)])
    theta = np.maximum(theta, 1e-30).astype(F32)  # float32's tail: no element rounded to 0
    theta[:, -1] = F32(1) - theta[:, :-1].sum(axis=1, dtype=F32)  # within float32's rounding
    keep = theta[:, -1] > 0
    theta, alpha = theta[keep], alpha[keep]
    module = autobatch.Module.compile(
        "fn main(t: float[%d], a: float[%d]) -> float { return dirichlet_lpdf(t | a); }\n" % (k, k))
    result = module.run(inputs={"t": theta, "a": alpha}, backend="vm", progress=False)
    assert result.faults == []
    ours = result.outputs["result"].astype(np.float64)
    t, a = theta.astype(np.float64), alpha.astype(np.float64)
    want = (special.gammaln(a.sum(axis=1)) - special.gammaln(a).sum(axis=1) +
            special.xlogy(a - 1, t).sum(axis=1))
    scale = np.spacing(np.maximum(np.abs(want), 1.0).astype(F32)).astype(np.float64)
    errors = np.abs(ours - want) / scale
    return float(errors.max()), len(want)


@pytest.mark.parametrize("k", [2, 3, 10])
def test_dirichlet_matches_scipy(k):
    error, _ = dirichlet_error(k)
    assert error <= BOUNDS["dirichlet_lpdf"], (k, error)


# The draws: (call, scipy distribution, continuous?)
DRAWS = [
    ("normal_rng(1.5, 2.0)", stats.norm(1.5, 2.0), True),
    ("std_normal_rng()", stats.norm(), True),
    ("uniform_rng(-1.0, 3.0)", stats.uniform(-1.0, 4.0), True),
    ("exponential_rng(2.0)", stats.expon(scale=0.5), True),
    ("gamma_rng(2.5, 2.0)", stats.gamma(2.5, scale=0.5), True),
    ("gamma_rng(0.2, 1.0)", stats.gamma(0.2), True),
    ("gamma_rng(80.0, 3.0)", stats.gamma(80.0, scale=1 / 3.0), True),
    ("inv_gamma_rng(3.0, 2.0)", stats.invgamma(3.0, scale=2.0), True),
    ("chi_square_rng(3.0)", stats.chi2(3.0), True),
    ("beta_rng(2.0, 3.0)", stats.beta(2.0, 3.0), True),
    ("beta_rng(0.2, 0.5)", stats.beta(0.2, 0.5), True),
    ("lognormal_rng(0.1, 0.5)", stats.lognorm(0.5, scale=np.exp(0.1)), True),
    ("student_t_rng(3.0, 1.0, 2.0)", stats.t(3.0, 1.0, 2.0), True),
    ("cauchy_rng(1.0, 2.0)", stats.cauchy(1.0, 2.0), True),
    ("double_exponential_rng(1.0, 2.0)", stats.laplace(1.0, 2.0), True),
    ("logistic_rng(1.0, 2.0)", stats.logistic(1.0, 2.0), True),
    ("float(bernoulli_rng(0.3))", stats.bernoulli(0.3), False),
    ("float(bernoulli_logit_rng(-0.4))", stats.bernoulli(special.expit(-0.4)), False),
    ("float(binomial_rng(10, 0.3))", stats.binom(10, 0.3), False),
    ("float(binomial_rng(500, 0.62))", stats.binom(500, 0.62), False),
    ("float(poisson_rng(3.5))", stats.poisson(3.5), False),
    ("float(poisson_rng(250.0))", stats.poisson(250.0), False),
    ("float(poisson_log_rng(2.0))", stats.poisson(np.exp(2.0)), False),
    ("weibull_rng(1.7, 2.0)", stats.weibull_min(1.7, scale=2.0), True),
    ("float(binomial_logit_rng(30, -0.7))", stats.binom(30, special.expit(-0.7)), False),
    ("float(neg_binomial_2_rng(6.0, 2.5))", stats.nbinom(2.5, 2.5 / 8.5), False),
    ("float(neg_binomial_2_rng(300.0, 40.0))", stats.nbinom(40.0, 40.0 / 340.0), False),
    ("float(neg_binomial_2_log_rng(1.2, 0.7))",
     stats.nbinom(0.7, 0.7 / (np.exp(1.2) + 0.7)), False),
    ("float(categorical_logit_rng([0.0, 1.0, -1.0, 0.5]))",
     stats.rv_discrete(values=([1, 2, 3, 4], special.softmax([0.0, 1.0, -1.0, 0.5]))), False),
]


def draws(call, lanes=20000, seed=11):
    module = autobatch.Module.compile("fn main(x: float) -> float { return %s; }\n" % call)
    result = module.run(inputs={"x": np.zeros(lanes, dtype=F32)}, backend="vm", seed=seed,
                        progress=False)
    assert result.faults == []
    return result.outputs["result"].astype(np.float64)


def p_value(call, dist, continuous):
    x = draws(call)
    if continuous:
        return stats.kstest(x, dist.cdf).pvalue
    values, counts = np.unique(x, return_counts=True)
    lo, hi = dist.ppf(1e-6), dist.ppf(1 - 1e-6)
    support = np.arange(lo, hi + 1)
    expected = dist.pmf(support) * len(x)
    observed = np.array([counts[values == k].sum() for k in support], dtype=np.float64)
    assert observed.sum() >= len(x) - 5  # nothing outside the support's bulk
    keep = expected >= 5  # pool the rest into one bin
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
    exp *= obs.sum() / exp.sum()
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize("case", DRAWS, ids=[c[0] for c in DRAWS])
def test_draws_follow_their_distribution(case):
    call, dist, continuous = case
    assert p_value(call, dist, continuous) > 1e-4


if __name__ == "__main__":
    print("| distribution | arguments tested | max error (ulp of max(\\|lp\\|, 1)) | where |")
    for name in sorted(DENSITIES):
        error, where, lanes = measure(name)
        print("| `%s` | %d | %.2f | %s |" % (name, lanes, error,
                                             ", ".join("%.4g" % w for w in where)))
    for k in (2, 3, 10):
        print("dirichlet_lpdf, K = %d: max error %.2f ulp over %d" % ((k,) + dirichlet_error(k)))
    for call, dist, continuous in DRAWS:
        print("%-55s p = %.3g" % (call, p_value(call, dist, continuous)))
    sys.exit(0)
