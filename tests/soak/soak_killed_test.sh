#!/bin/sh
# A soak stopped by a timeout keeps the report it printed: its stdout, sent to a file, is line
# buffered, so the progress lines are there although the process is killed mid-run.
#   soak_killed_test.sh build/tests/autobatch_soak
set -u
soak=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$soak" --programs 10000000 --no-vulkan --lanes 2 --out "$dir/failures" >"$dir/report.txt" \
  2>"$dir/errors.txt" &
pid=$!
# Give it up to 60 s to pass 100 programs (well under a second on an idle machine).
tries=0
while [ $tries -lt 600 ] && ! grep -q "^100 programs" "$dir/report.txt"; do
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
  tries=$((tries + 1))
done
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
if ! grep -q "^100 programs (seeds 1 to 100), 0 diverged$" "$dir/report.txt"; then
  echo "the killed soak's report lost its progress lines; stdout was:"
  cat "$dir/report.txt"
  echo "stderr was:"
  cat "$dir/errors.txt"
  exit 1
fi
echo "ok: $(grep -c programs "$dir/report.txt") progress lines survived the kill"
