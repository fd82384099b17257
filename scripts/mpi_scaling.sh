#!/usr/bin/env bash
# Issue 46's scaling figure: `mpirun -n 2` with one thread per rank against one process with one
# thread, on the 256-chain logistic regression (vm): gradients per wall second and CPU seconds,
# run alternately REPEATS times, then the median wall ratio. Also checks that both write the same
# draws. Usage: scripts/mpi_scaling.sh [build dir]; DRAWS, WARMUP, REPEATS from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
AB=${1:-build}/autobatch
DRAWS=${DRAWS:-10} WARMUP=${WARMUP:-10} REPEATS=${REPEATS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=(sample samples/models/logistic_regression.ab -u X=@samples/data/logreg_X.npy
      -u y=@samples/data/logreg_y.npy --backend vm --threads 1 --chains 256 --draws "$DRAWS"
      --warmup "$WARMUP" --seed 1 --format json)
mpi=(mpirun --oversubscribe -n 2)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
ratios=()
for i in $(seq "$REPEATS"); do
  declare -A wall
  for mode in one two; do
    cmd=("$AB" "${args[@]}" --out "$out/$mode")
    [ "$mode" = two ] && cmd=("${mpi[@]}" "${cmd[@]}")
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S" -o "$out/time" "${cmd[@]}" > "$out/$mode.json" 2> "$out/$mode.err"
    read -r w user sys < "$out/time"
    grads=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gradient_evaluations'])" "$out/$mode.json")
    wall[$mode]=$w
    echo "$mode run $i: load $load, wall $w s, CPU $(python3 -c "print(round($user + $sys, 2))") s, $grads gradients, $(python3 -c "print(round($grads / $w))") per wall second"
  done
  cmp -s "$out/one/draws.npy" "$out/two/draws.npy" || { echo "FAIL: the draws differ"; exit 1; }
  ratios+=("$(python3 -c "print(${wall[one]} / ${wall[two]})")")
done
python3 -c "import statistics,sys; print('median wall ratio (2 ranks / 1 process, gradients per second): %.2fx' % statistics.median(map(float, sys.argv[1:])))" "${ratios[@]}"
