#!/usr/bin/env python3
"""Writes the data files of the sampler's models (samples/models/README.md), deterministically.

Python 3 standard library only (no numpy). Every random number comes from PCG32 (O'Neill 2014,
"PCG: A Family of Simple Fast Space-Efficient Statistically Good Algorithms for Random Number
Generation") with the fixed seed SEED and one stream per data set, so changing one data set does
not change the others; normals are Box-Muller pairs. Running it twice writes the same bytes.

  samples/data/gaussian_precision.npy    [100,100]  P = A A^T / 100 + 0.01 I, A[i][j] ~ N(0,1)
  samples/data/gaussian_covariance.npy   [100,100]  P^-1 (Gauss-Jordan, double precision)
  samples/data/logreg_X.npy              [10000,100] X ~ U[-1,1]
  samples/data/logreg_y.npy              [10000]    y ~ Bernoulli(sigmoid(X w*)), 0.0 or 1.0
  samples/data/logreg_true_w.npy         [100]      w* ~ N(0,1)
  tests/data/models/logreg_small_X.npy   [200,3]    as above, N = 200, D = 3
  tests/data/models/logreg_small_y.npy   [200]
  tests/data/models/logreg_small_true_w.npy [3]
  tests/data/models/logreg_small_posterior_mean.npy [3]   the exact posterior mean and
  tests/data/models/logreg_small_posterior_cov.npy  [3,3] covariance of logreg_small.ab, by quadrature

All files are little-endian float32 .npy (format version 1.0). Values are rounded to float32
before anything is derived from them (the covariance inverts the stored precision matrix, y is
drawn from the stored X and w*, the posterior moments use the stored data), so the reference
values belong to exactly the data the models read.

Usage: scripts/make_model_data.py [REPO_ROOT]   (default: the directory above this script)
"""
import hashlib
import math
import os
import struct
import sys

SEED = 20200229
STREAM_PRECISION = 1
STREAM_LOGREG = 2
STREAM_LOGREG_SMALL = 3

MASK64 = (1 << 64) - 1


class Pcg32:
    """PCG-XSH-RR: a 64-bit LCG state, a 32-bit output by xorshift-high and a random rotation."""

    MULTIPLIER = 6364136223846793005

    def __init__(self, seed, stream):
        self.increment = ((stream << 1) | 1) & MASK64
        self.state = 0
        self.next_u32()
        self.state = (self.state + seed) & MASK64
        self.next_u32()
        self.cached_normal = None

    def next_u32(self):
        old = self.state
        self.state = (old * self.MULTIPLIER + self.increment) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((32 - rot) & 31))) & 0xFFFFFFFF

    def uniform(self):
        """A double in [0, 1) with 53 random bits."""
        high = self.next_u32() >> 5
        low = self.next_u32() >> 6
        return (high * 67108864.0 + low) / 9007199254740992.0

    def normal(self):
        """A standard normal: Box-Muller, both values of each pair used."""
        if self.cached_normal is not None:
            value, self.cached_normal = self.cached_normal, None
            return value
        radius = math.sqrt(-2.0 * math.log(1.0 - self.uniform()))  # 1 - u is in (0, 1]
        angle = 2.0 * math.pi * self.uniform()
        self.cached_normal = radius * math.sin(angle)
        return radius * math.cos(angle)


def to_float32(values):
    """The values rounded to the nearest float32, as Python floats."""
    return list(struct.unpack("<%df" % len(values), struct.pack("<%df" % len(values), *values)))


def write_npy(path, shape, values):
    """A little-endian float32 .npy file, format 1.0, C order."""
    count = 1
    for n in shape:
        count *= n
    assert len(values) == count, (path, shape, len(values))
    shape_text = "(%d,)" % shape[0] if len(shape) == 1 else "(" + ", ".join(str(n) for n in shape) + ")"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    # magic (6) + version (2) + header length (2) + header + '\n' is padded to a multiple of 64
    padding = (-(10 + len(header) + 1)) % 64
    header = (header + " " * padding + "\n").encode("ascii")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(struct.pack("<H", len(header)))
        f.write(header)
        f.write(struct.pack("<%df" % count, *values))
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    print("  wrote %s %s sha256 %s" % (path, list(shape), digest))


def flatten(rows):
    return [v for row in rows for v in row]


# ---- dense linear algebra in double precision (small matrices only) ----

def mat_vec(a, x):
    return [sum(aij * xj for aij, xj in zip(row, x)) for row in a]


def gauss_jordan_inverse(a):
    """The inverse of a square matrix by Gauss-Jordan elimination with partial pivoting."""
    n = len(a)
    m = [list(row) + [1.0 if i == j else 0.0 for j in range(n)] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if m[pivot][col] == 0.0:
            raise ValueError("singular matrix")
        m[col], m[pivot] = m[pivot], m[col]
        inv_pivot = 1.0 / m[col][col]
        pivot_row = [v * inv_pivot for v in m[col]]
        m[col] = pivot_row
        for r in range(n):
            factor = m[r][col]
            if r != col and factor != 0.0:
                m[r] = [v - factor * p for v, p in zip(m[r], pivot_row)]
    return [row[n:] for row in m]


def cholesky(a):
    """The lower Cholesky factor of a symmetric matrix; ValueError unless it is positive definite."""
    n = len(a)
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            s = a[i][j] - sum(low[i][k] * low[j][k] for k in range(j))
            if i == j:
                if s <= 0.0:
                    raise ValueError("not positive definite (pivot %d is %g)" % (i, s))
                low[i][i] = math.sqrt(s)
            else:
                low[i][j] = s / low[j][j]
    return low


def symmetric_eigenvalues(a, tolerance=1e-13):
    """All eigenvalues of a symmetric matrix, by cyclic Jacobi rotations, ascending."""
    n = len(a)
    m = [list(row) for row in a]
    scale = sum(v * v for row in m for v in row)
    for _ in range(50):
        off = sum(m[i][j] * m[i][j] for i in range(n) for j in range(n) if i != j)
        if off <= tolerance * tolerance * scale:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = m[p][q]
                if abs(apq) < 1e-300:
                    continue
                theta = (m[q][q] - m[p][p]) / (2.0 * apq)
                t = math.copysign(1.0, theta) / (abs(theta) + math.sqrt(theta * theta + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                row_p, row_q = m[p], m[q]
                for k in range(n):  # rows p and q
                    x, y = row_p[k], row_q[k]
                    row_p[k] = c * x - s * y
                    row_q[k] = s * x + c * y
                for row in m:  # columns p and q
                    x, y = row[p], row[q]
                    row[p] = c * x - s * y
                    row[q] = s * x + c * y
    else:
        raise ValueError("Jacobi did not converge")
    return sorted(m[i][i] for i in range(n))


# ---- the data sets ----

def make_gaussian(root):
    """A Wishart-like precision matrix plus a ridge: P = A A^T / K + RIDGE I."""
    d, k, ridge = 100, 100, 0.01
    rng = Pcg32(SEED, STREAM_PRECISION)
    a = [[rng.normal() for _ in range(k)] for _ in range(d)]
    p = [[0.0] * d for _ in range(d)]
    for i in range(d):
        for j in range(i, d):
            v = sum(x * y for x, y in zip(a[i], a[j])) / k + (ridge if i == j else 0.0)
            p[i][j] = p[j][i] = v
    p = [to_float32(row) for row in p]  # what the model reads; still exactly symmetric
    cholesky(p)  # raises unless the stored matrix is positive definite
    eigenvalues = symmetric_eigenvalues(p)
    cov = gauss_jordan_inverse(p)
    cov = [[0.5 * (cov[i][j] + cov[j][i]) for j in range(d)] for i in range(d)]
    residual = max(abs(v - (1.0 if i == j else 0.0))
                   for i, row in enumerate(p) for j, v in enumerate(mat_vec(cov, row)))
    sd = [math.sqrt(cov[i][i]) for i in range(d)]
    corr = sorted(abs(cov[i][j]) / (sd[i] * sd[j]) for i in range(d) for j in range(i + 1, d))
    print("gaussian: P = A A^T/%d + %g I, eigenvalues %.6g .. %.6g, condition number %.1f"
          % (k, ridge, eigenvalues[0], eigenvalues[-1], eigenvalues[-1] / eigenvalues[0]))
    print("  covariance: marginal sd %.3f .. %.3f, |correlation| median %.3f, 90%% %.3f, max %.3f;"
          " max |P Sigma - I| %.2e" % (min(sd), max(sd), corr[len(corr) // 2],
                                      corr[int(0.9 * len(corr))], corr[-1], residual))
    write_npy(os.path.join(root, "samples/data/gaussian_precision.npy"), (d, d), flatten(p))
    write_npy(os.path.join(root, "samples/data/gaussian_covariance.npy"), (d, d), flatten(cov))


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0.0 else math.exp(z) / (1.0 + math.exp(z))


def make_logreg(rng, n, d):
    """X ~ U[-1,1]^(n x d), w* ~ N(0, I), y_i ~ Bernoulli(sigmoid(x_i . w*)); float32 values."""
    w = to_float32([rng.normal() for _ in range(d)])
    x = [to_float32([2.0 * rng.uniform() - 1.0 for _ in range(d)]) for _ in range(n)]
    y = [1.0 if rng.uniform() < sigmoid(sum(a * b for a, b in zip(row, w))) else 0.0 for row in x]
    return x, y, w


def logreg_log_posterior(x, y, w, prior_var):
    """log p(w | X, y) up to a constant, as in logistic_regression.ab, in double precision."""
    total = -0.5 * sum(v * v for v in w) / prior_var
    for row, yi in zip(x, y):
        z = sum(a * b for a, b in zip(row, w))
        total += yi * z - (max(z, 0.0) + math.log1p(math.exp(-abs(z))))
    return total


def logreg_posterior_moments(x, y, prior_var):
    """The posterior mean and covariance of a low-dimensional logistic regression.

    Newton's method finds the mode and the Hessian H there; in the coordinates u with
    w = mode + L u (L L^T = H^-1) the posterior is close to a standard normal, and the trapezoid
    rule on a grid of step 0.5 over [-7, 7]^d integrates such smooth, fast-decaying functions to
    many digits (the error of the trapezoid rule on R falls like exp(-2 pi^2 / h^2))."""
    d = len(x[0])
    w = [0.0] * d
    for _ in range(100):
        grad = [-v / prior_var for v in w]
        hess = [[(1.0 / prior_var if i == j else 0.0) for j in range(d)] for i in range(d)]
        for row, yi in zip(x, y):
            s = sigmoid(sum(a * b for a, b in zip(row, w)))
            for i in range(d):
                grad[i] += (yi - s) * row[i]
                for j in range(d):
                    hess[i][j] += s * (1.0 - s) * row[i] * row[j]
        step = mat_vec(gauss_jordan_inverse(hess), grad)
        w = [a + b for a, b in zip(w, step)]
        if max(abs(v) for v in step) < 1e-13:
            break
    low = cholesky(gauss_jordan_inverse(hess))
    h, half_width = 0.5, 14
    nodes = [h * k for k in range(-half_width, half_width + 1)]
    top = logreg_log_posterior(x, y, w, prior_var)
    mass, first, second = 0.0, [0.0] * d, [[0.0] * d for _ in range(d)]

    def grid(prefix):
        if len(prefix) == d:
            yield prefix
            return
        for node in nodes:
            yield from grid(prefix + [node])

    for u in grid([]):
        point = [w[i] + sum(low[i][k] * u[k] for k in range(i + 1)) for i in range(d)]
        weight = math.exp(logreg_log_posterior(x, y, point, prior_var) - top)
        mass += weight
        for i in range(d):
            first[i] += weight * point[i]
            for j in range(d):
                second[i][j] += weight * point[i] * point[j]
    mean = [v / mass for v in first]
    cov = [[second[i][j] / mass - mean[i] * mean[j] for j in range(d)] for i in range(d)]
    return mean, cov


def write_logreg(root, prefix, x, y, w):
    write_npy(os.path.join(root, prefix + "_X.npy"), (len(x), len(x[0])), flatten(x))
    write_npy(os.path.join(root, prefix + "_y.npy"), (len(y),), y)
    write_npy(os.path.join(root, prefix + "_true_w.npy"), (len(w),), w)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    make_gaussian(root)

    x, y, w = make_logreg(Pcg32(SEED, STREAM_LOGREG), 10000, 100)
    print("logreg: N = %d, D = %d, %d ones in y" % (len(x), len(w), int(sum(y))))
    write_logreg(root, "samples/data/logreg", x, y, w)

    x, y, w = make_logreg(Pcg32(SEED, STREAM_LOGREG_SMALL), 200, 3)
    mean, cov = logreg_posterior_moments(x, y, prior_var=25.0)
    print("logreg_small: N = %d, D = %d, %d ones in y, true w %s" % (
        len(x), len(w), int(sum(y)), " ".join("%.4f" % v for v in w)))
    print("  posterior mean %s, sd %s" % (" ".join("%.5f" % v for v in mean),
                                         " ".join("%.5f" % math.sqrt(cov[i][i]) for i in range(3))))
    write_logreg(root, "tests/data/models/logreg_small", x, y, w)
    write_npy(os.path.join(root, "tests/data/models/logreg_small_posterior_mean.npy"), (3,), mean)
    write_npy(os.path.join(root, "tests/data/models/logreg_small_posterior_cov.npy"), (3, 3), flatten(cov))


if __name__ == "__main__":
    main()
