#!/usr/bin/env bash
# Issue 16's autotune target: a second process's first training step with a warm cache is within
# 10% of the first process's tenth. Runs bench_train_step --step-times 10 twice with one fresh
# autotune cache folder (EMBER_AUTOTUNE_CACHE) and prints, per pair, both processes' step 1 and
# step 10 (wall ms, and process CPU ms in brackets) and the ratios (second's step 1) / (first's
# step 10), by wall and by CPU time, and against the median of the first's steps 6-10. REPEATS pairs (default 3), each with a new folder.
#   bench/autotune_warm_cache.sh [BUILD_DIR] [extra bench_train_step options...]
set -euo pipefail
build=${1:-build}
shift || true
exe="$build/bench/bench_train_step"
[ -x "$exe" ] || { echo "missing $exe (configure with -DEMBER_BUILD_BENCH=ON)" >&2; exit 2; }
# "step N: W ms (cpu C ms)" -> "W C"
step() { sed -n "s/^step $1: \([0-9.]*\) ms (cpu \([0-9.]*\) ms)$/\1 \2/p" <<<"$2"; }
for rep in $(seq 1 "${REPEATS:-3}"); do
  dir=$(mktemp -d)
  first=$(EMBER_AUTOTUNE_CACHE="$dir" "$exe" --step-times 10 "$@")
  second=$(EMBER_AUTOTUNE_CACHE="$dir" "$exe" --step-times 10 "$@")
  rm -rf "$dir"
  read -r f1 f1c <<<"$(step 1 "$first")"
  read -r f10 f10c <<<"$(step 10 "$first")"
  read -r s1 s1c <<<"$(step 1 "$second")"
  read -r s10 s10c <<<"$(step 10 "$second")"
  # The first process's steps 6-10, median (steadier than step 10 alone on a shared machine).
  med=$(for i in 6 7 8 9 10; do step $i "$first"; done | sort -n -k1 | sed -n 3p)
  medc=$(for i in 6 7 8 9 10; do step $i "$first"; done | sort -n -k2 | sed -n 3p | cut -d' ' -f2)
  med=${med%% *}
  echo "pair $rep: first process step 1 $f1 ($f1c) ms, step 10 $f10 ($f10c) ms;" \
       "second process step 1 $s1 ($s1c) ms, step 10 $s10 ($s10c) ms;" \
       "second's step 1 / first's step 10 = $(awk "BEGIN{printf \"%.3f\", $s1/$f10}") wall," \
       "$(awk "BEGIN{printf \"%.3f\", $s1c/$f10c}") cpu; against the median of the first's" \
       "steps 6-10 ($med ($medc) ms): $(awk "BEGIN{printf \"%.3f\", $s1/$med}") wall," \
       "$(awk "BEGIN{printf \"%.3f\", $s1c/$medc}") cpu"
  grep '^autotune:' <<<"$first" | sed 's/^/  first:  /'
  grep '^autotune:' <<<"$second" | sed 's/^/  second: /'
done
