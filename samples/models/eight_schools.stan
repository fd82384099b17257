// The same model as eight_schools.ab, for comparing with Stan (docs/nuts.md, issue 28).
data { int<lower=0> J; vector[J] y; vector<lower=0>[J] sigma; }
parameters { real mu; real<lower=0> tau; vector[J] eta; }
model {
  mu ~ normal(0, 5); tau ~ normal(0, 5); eta ~ std_normal();
  y ~ normal(mu + tau * eta, sigma);
}
