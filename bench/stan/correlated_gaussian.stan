// samples/models/correlated_gaussian.ab written in Stan: log p(q) = -1/2 q' P q with P the
// uniform `precision` (samples/data/gaussian_precision.npy). The bench's `stan` system
// (docs/nuts.md, "Stan") samples it.
data {
  int<lower=1> D;
  matrix[D, D] P;
}
parameters {
  vector[D] q;
}
model {
  target += -0.5 * quad_form(P, q);
}
