// The same model as poisson_regression.ab, for comparing with Stan (docs/nuts.md, issue 28).
data {
  int<lower=0> N;
  vector[N] x;
  int<lower=0> y[N];
}
parameters {
  real alpha;
  real beta;
}
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 2);
  y ~ poisson_log(alpha + beta * x);
}
