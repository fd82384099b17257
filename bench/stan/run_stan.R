# Runs one of the bench's NUTS workloads in real Stan (rstan) for `autobatch bench --systems stan`
# (tools/sample/nuts_bench.cpp, docs/nuts.md "Stan"):
#
#   Rscript run_stan.R MODEL.stan DATA_DIR WORKLOAD CHAINS DRAWS STEP_SIZE MAX_DEPTH SEED CORES CACHE WARMUP
#
# WORKLOAD is logistic_regression, correlated_gaussian or earnings_logearn_height, the Stan
# model's name (which .npy files to read from DATA_DIR; every form of a target, nuts_logreg and
# nuts_logreg_loop alike, shares it). Every chain samples DRAWS transitions at the fixed STEP_SIZE
# (as the bench's other systems do), one chain per core on CORES forked workers. The model is
# compiled once into CACHE. Prints
#   stan_result gradients=G cpu_seconds=C wall_seconds=W
# G: the sum of n_leapfrog__ over the sampling phase of every chain; C: the sum of Stan's own
# sampling-phase timers (std::clock, CPU time); W: wall time of sampling all chains. WARMUP > 0
# (earnings_logearn_height): that many adaptation iterations first (step size and diagonal metric, from
# STEP_SIZE), counted in G and C as the other systems count theirs.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 11) stop("usage: run_stan.R MODEL DATA_DIR WORKLOAD CHAINS DRAWS STEP MAX_DEPTH SEED CORES CACHE WARMUP")
model_file <- args[1]; data_dir <- args[2]; workload <- args[3]
chains <- as.integer(args[4]); draws <- as.integer(args[5]); step <- as.numeric(args[6])
max_depth <- as.integer(args[7]); seed <- as.integer(args[8]); cores <- as.integer(args[9])
cache <- args[10]; warmup <- as.integer(args[11])

suppressPackageStartupMessages({
  library(rstan)
  library(parallel)
})

# A float32 .npy file (version 1 or 2 header), as a vector or a row-major matrix.
read_npy <- function(path) {
  con <- file(path, "rb")
  on.exit(close(con))
  magic <- readBin(con, "raw", 6)
  version <- as.integer(readBin(con, "raw", 2))
  header_len <- if (version[1] == 1) {
    readBin(con, "integer", 1, size = 2, signed = FALSE, endian = "little")
  } else {
    readBin(con, "integer", 1, size = 4, endian = "little")
  }
  header <- rawToChar(readBin(con, "raw", header_len))
  if (!grepl("'<f4'", header, fixed = TRUE)) stop(paste(path, "is not float32"))
  shape_text <- sub(".*'shape': *\\(([^)]*)\\).*", "\\1", header)
  shape <- as.integer(strsplit(gsub(" ", "", shape_text), ",")[[1]])
  shape <- shape[!is.na(shape)]
  values <- readBin(con, "numeric", prod(shape), size = 4, endian = "little")
  if (length(shape) == 2) matrix(values, nrow = shape[1], ncol = shape[2], byrow = TRUE) else values
}

data <- if (workload == "logistic_regression") {
  X <- read_npy(file.path(data_dir, "logreg_X.npy"))
  list(N = nrow(X), D = ncol(X), X = X, y = as.integer(read_npy(file.path(data_dir, "logreg_y.npy"))))
} else if (workload == "earnings_logearn_height") {
  log_earn <- read_npy(file.path(data_dir, "earnings_log_earn.npy"))
  list(N = length(log_earn), log_earn = log_earn,
       height = read_npy(file.path(data_dir, "earnings_height.npy")))
} else {
  P <- read_npy(file.path(data_dir, "gaussian_precision.npy"))
  list(D = nrow(P), P = P)
}

# Debian's r-cran-bh is a stub without headers (its Boost is libboost-dev's, in /usr/include),
# and rstan then stops with "Boost not found": point it at the system's Boost (or at
# $AB_BOOST_INCLUDE).
boost <- Sys.getenv("AB_BOOST_INCLUDE", "")
if (boost == "" && system.file("include", package = "BH") == "" &&
    file.exists("/usr/include/boost/version.hpp")) boost <- "/usr/include"
if (boost != "") rstan_options(boost_lib = boost)

# Compiled once per model source: the cache holds a copy of the source and its compiled model.
dir.create(cache, recursive = TRUE, showWarnings = FALSE)
source_text <- readLines(model_file)
key <- paste0(tools::file_path_sans_ext(basename(model_file)), "-",
              substr(tools::md5sum(model_file), 1, 12))
rds <- file.path(cache, paste0(key, ".rds"))
model <- if (file.exists(rds)) readRDS(rds) else {
  m <- stan_model(model_code = paste(source_text, collapse = "\n"), model_name = key)
  saveRDS(m, rds)
  m
}

one_chain <- function(chain) {
  fit <- sampling(model, data = data, chains = 1, chain_id = chain, iter = warmup + draws,
                  warmup = warmup, seed = seed, algorithm = "NUTS", refresh = 0, cores = 1,
                  control = list(stepsize = step, max_treedepth = max_depth,
                                 adapt_engaged = warmup > 0))
  params <- get_sampler_params(fit, inc_warmup = TRUE)[[1]]
  c(sum(params[, "n_leapfrog__"]), sum(get_elapsed_time(fit)))
}
# One short run first, so the forked workers find the model's library loaded and its R code
# byte-compiled: the wall time then counts sampling, not R's start-up.
invisible(capture.output(suppressWarnings(one_chain(0L))))
start <- proc.time()[["elapsed"]]
results <- mclapply(seq_len(chains), one_chain, mc.cores = min(cores, chains),
                    mc.preschedule = FALSE)
wall <- proc.time()[["elapsed"]] - start
failed <- vapply(results, function(r) !is.numeric(r), logical(1))
if (any(failed)) stop(paste("a chain failed:", paste(results[failed], collapse = "; ")))
totals <- Reduce(`+`, results)
cat(sprintf("stan_result gradients=%.0f cpu_seconds=%.6f wall_seconds=%.6f\n",
            totals[1], totals[2], wall))
