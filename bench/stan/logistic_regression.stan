// samples/models/logistic_regression.ab written in Stan, in Stan's fastest formulation
// (bernoulli_logit_glm: two matrix-vector products per gradient). The bench's `stan` system
// (docs/nuts.md, "Stan") samples it on the same data (samples/data/logreg_X.npy, logreg_y.npy).
// Stan 2.21's syntax (Debian's r-cran-rstan), which later versions also read.
data {
  int<lower=0> N;
  int<lower=0> D;
  matrix[N, D] X;
  int<lower=0, upper=1> y[N];
}
parameters {
  vector[D] w;
}
model {
  w ~ normal(0, 5);
  y ~ bernoulli_logit_glm(X, 0, w);
}
