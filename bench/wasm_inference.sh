#!/usr/bin/env bash
# MNIST CNN inference in WebAssembly (node; single-threaded and pthreads) against the native
# build, batch 1 and 256 (bench/wasm_inference.cpp), and the wasm/native ratios per digit.
#   bench/wasm_inference.sh WASM_BUILD NATIVE_BENCH [THREADS]
#   WASM_BUILD: the wasm build folder (scripts/build-wasm.sh bench_wasm_inference
#   bench_wasm_inference_threads); NATIVE_BENCH: the native bench_wasm_inference binary;
#   THREADS: for the threaded wasm run and the native one (default 2).
set -euo pipefail
wasm=$1 native=$2 threads=${3:-2}
run() {  # prints "batch ms_per_digit" pairs
  "$@" | tee /dev/stderr | sed -n 's/^batch \([0-9]*\): .* ms per batch, \([0-9.]*\) ms per digit.*/\1 \2/p'
}
declare -A ms
while read -r b v; do ms[native1,$b]=$v; done < <(run "$native" --threads 1)
while read -r b v; do ms[nativeT,$b]=$v; done < <(run "$native" --threads "$threads")
while read -r b v; do ms[wasm1,$b]=$v; done < <(run node "$wasm/bench_wasm_inference.js")
while read -r b v; do ms[wasmT,$b]=$v; done < <(run node "$wasm/bench_wasm_inference_threads.js" --threads "$threads")
for b in 1 256; do
  awk -v b="$b" -v t="$threads" -v n1="${ms[native1,$b]}" -v nt="${ms[nativeT,$b]}" \
    -v w1="${ms[wasm1,$b]}" -v wt="${ms[wasmT,$b]}" 'BEGIN {
      printf "batch %d, ms per digit: native %.4f (1 thread) %.4f (%d); wasm %.4f (1 thread) %.4f (%d);", b, n1, nt, t, w1, wt, t
      printf " wasm/native %.1fx (1 thread) %.1fx (%d threads)\n", w1 / n1, wt / nt, t }'
done
