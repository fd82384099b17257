// samples/models/earnings_logearn_height.ab in Stan: posteriordb's earnings-logearn_height,
// whose transformed data log(earn) is read here as data (samples/data/earnings_log_earn.npy, the
// same float32 values the .ab model reads). Stan 2.21's syntax (Debian's r-cran-rstan).
data {
  int<lower=0> N;
  vector[N] log_earn;
  vector[N] height;
}
parameters {
  vector[2] beta;
  real<lower=0> sigma;
}
model {
  log_earn ~ normal(beta[1] + beta[2] * height, sigma);
}
