#!/usr/bin/env bash
# Fails, listing them, when tracked C++ files (*.cpp, *.h, *.cpp.in) differ from what clang-format
# makes of them with the repository's .clang-format, so style never needs a review comment.
# GLSL (*.glsl, *.comp) and .ab files are not checked. Fix with the command it prints.
#
# Usage: scripts/check_format.sh [SOURCE_DIR]   (default: the repository this script is in)
# CTest runs it as `format_check` (label `quick`). Exit status: 0 formatted, 1 unformatted files
# (or clang-format failed), 77 no clang-format binary (CTest reports the test as skipped).
# CLANG_FORMAT=path picks the binary; otherwise clang-format-14 (the version the tree is
# formatted with; scripts/setup.sh installs it), then clang-format.
set -uo pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd -P) || exit 1
cd "$root" || exit 1

clang_format=${CLANG_FORMAT:-}
if [ -z "$clang_format" ]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null 2>&1; then
      clang_format=$candidate
      break
    fi
  done
fi
if [ -z "$clang_format" ] || ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "check_format: SKIPPED: no clang-format binary found" \
    "(apt-get install clang-format-14, or set CLANG_FORMAT)"
  exit 77
fi

# The files: tracked ones in a git checkout, else every matching file outside build and hidden
# directories. Third-party or generated sources would be listed in `excluded`; none are tracked
# today (generated sources are written under build/).
excluded='^(build[^/]*|third_party|external)/'
files=()
if [ "$(git -C "$root" rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
  while IFS= read -r -d '' f; do
    [[ $f =~ $excluded ]] || files+=("$f")
  done < <(git -C "$root" ls-files -z -- '*.cpp' '*.h' '*.cpp.in')
else
  while IFS= read -r -d '' f; do
    f=${f#./}
    [[ $f =~ $excluded ]] || files+=("$f")
  done < <(find . -mindepth 1 \( -path './build*' -o -name '.*' \) -prune -o -type f \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.cpp.in' \) -print0 | sort -z)
fi
if ((${#files[@]} == 0)); then
  echo "check_format: no C++ files found under $root"
  exit 1
fi

# One clang-format process for every file (a process per file takes 10x longer).
output=$("$clang_format" --style=file --dry-run --Werror "${files[@]}" 2>&1)
status=$?
if ((status == 0)); then
  echo "check_format: ${#files[@]} files formatted ($("$clang_format" --version))"
  exit 0
fi
mapfile -t bad < <(printf '%s\n' "$output" | grep -E ': error: code should be clang-formatted' |
  sed -E 's/:[0-9]+:[0-9]+: error: .*//' | sort -u)
if ((${#bad[@]} == 0)); then
  echo "check_format: $clang_format failed (exit status $status):"
  printf '%s\n' "$output" | head -40
  exit 1
fi
echo "check_format: ${#bad[@]} of ${#files[@]} files are not clang-formatted" \
  "($("$clang_format" --version)):"
printf '  %s\n' "${bad[@]}"
echo "fix: (cd $root && $clang_format -i ${bad[*]})"
exit 1
