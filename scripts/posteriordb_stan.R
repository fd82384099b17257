# Stan's own ESS per gradient on one posteriordb posterior, for scripts/posteriordb_check.py
# (docs/nuts.md, "posteriordb"): rstan, CHAINS chains of WARMUP + DRAWS with Stan's defaults.
#
#   Rscript posteriordb_stan.R MODEL.stan DATA.json CHAINS WARMUP DRAWS SEED CACHE_DIR NAMES
#
# Prints one line: stan_result gradients=G min_bulk_ess=E min_tail_ess=T, where G is the sum of
# n_leapfrog__ over the sampling phase of every chain and the ESS are the minimum over NAMES, the
# reference summary's columns (rstan's ess_bulk and ess_tail, Vehtari et al. 2021). The compiled
# model is kept in CACHE_DIR.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 8) stop("usage: posteriordb_stan.R MODEL DATA CHAINS WARMUP DRAWS SEED CACHE NAMES")
suppressPackageStartupMessages({
  library(rstan)
  library(jsonlite)
})
# Debian's r-cran-bh has no headers: use the system's Boost, as bench/stan/run_stan.R does.
boost <- Sys.getenv("AB_BOOST_INCLUDE", "")
if (boost == "" && system.file("include", package = "BH") == "" &&
    file.exists("/usr/include/boost/version.hpp")) boost <- "/usr/include"
if (boost != "") rstan_options(boost_lib = boost)
# Compiled once per model source.
dir.create(args[7], recursive = TRUE, showWarnings = FALSE)
key <- paste0(basename(dirname(args[1])), "-", substr(tools::md5sum(args[1]), 1, 12))
rds <- file.path(args[7], paste0(key, ".rds"))
# posteriordb writes Stan 2.26's `array[N] real y`; rstan 2.21 reads only `real y[N]`.
old_syntax <- function(lines)
  gsub("array\\[([^]]+)\\]\\s+([A-Za-z_]+(<[^>]*>)?(\\[[^]]*\\])?)\\s+([A-Za-z_][A-Za-z0-9_]*)",
       "\\2 \\5[\\1]", lines, perl = TRUE)
model <- if (file.exists(rds)) readRDS(rds) else {
  m <- stan_model(model_code = paste(old_syntax(readLines(args[1])), collapse = "\n"),
                  model_name = gsub("[^A-Za-z0-9_]", "_", key))
  saveRDS(m, rds)
  m
}
data <- fromJSON(args[2], simplifyVector = TRUE)
fit <- sampling(model, data = data, chains = as.integer(args[3]), warmup = as.integer(args[4]),
                iter = as.integer(args[4]) + as.integer(args[5]), seed = as.integer(args[6]),
                refresh = 0, cores = 1)
gradients <- sum(sapply(get_sampler_params(fit, inc_warmup = FALSE),
                        function(p) sum(p[, "n_leapfrog__"])))
# The ESS over the reference summary's columns (NAMES, comma-separated), as ours is.
sims <- as.array(fit)
bulk <- c(); tail <- c()
for (name in strsplit(args[8], ",")[[1]]) {
  x <- sims[, , name]
  bulk <- c(bulk, ess_bulk(x)); tail <- c(tail, ess_tail(x))
}
cat(sprintf("stan_result gradients=%d min_bulk_ess=%.1f min_tail_ess=%.1f\n", gradients,
            min(bulk), min(tail)))
