// The same model as constrained.ab, for comparing with Stan (docs/nuts.md, issue 28).
parameters { real<lower=0, upper=1> p; real<lower=1> r; real<upper=4> s; vector[2] z; }
model { target += 2 * log(p) + 4 * log1m(p) - (r - 1) - 2 * (4 - s) - 0.5 * dot_self(z); }
