#!/usr/bin/env bash
# Compiles every ```cpp block of README.md and docs/*.md against the built library, so the
# documentation cannot drift from the API (ctest: docs/snippets). A block with `int main` is a
# program: it is compiled, linked and run. A block that starts with #include is compiled as a
# file. Any other block is a list of statements: it is compiled as the body of a function after
# #include <ember/ember.h> and `using namespace ember;`. No block found fails.
# Usage: doc_snippets_test.sh SOURCE_DIR LIBEMBER CXX [compiler flags...]
set -uo pipefail
src=$1 lib=$2 cxx=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
for md in "$src"/README.md "$src"/docs/*.md; do
  # Splits the blocks into $tmp/<n>.block, each with a "file:line" first line.
  awk -v dir="$tmp" -v name="${md#"$src"/}" -v base="$n" '
    /^```(cpp|c\+\+)[ \t]*$/ { inb = 1; k++; f = dir "/" base + k ".block"; print name ":" NR + 1 > f; next }
    /^```/ { if (inb) close(f); inb = 0; next }
    inb { print > f }
    END { print k + 0 > dir "/count" }' "$md"
  n=$((n + $(cat "$tmp/count")))
done
[ "$n" -gt 0 ] || { echo "no C++ blocks found in README.md and docs/" >&2; exit 1; }
for ((i = 1; i <= n; i++)); do
  b=$tmp/$i.block
  where=$(head -n 1 "$b")
  body=$tmp/$i.body
  tail -n +2 "$b" >"$body"
  cpp=$tmp/snippet$i.cpp
  mode=compile
  if grep -q 'int main' "$body"; then
    mode=run
    cp "$body" "$cpp"
  elif grep -v '^[[:space:]]*\(//.*\)\?$' "$body" | head -n 1 | grep -q '^#include'; then
    cp "$body" "$cpp"
  else
    { printf '#include <ember/ember.h>\nusing namespace ember;\n[[maybe_unused]] static void snippet() {\n'
      cat "$body"
      printf '\n}\n'; } >"$cpp"
  fi
  if [ $mode = run ]; then
    ok=1
    "$cxx" "$@" "$cpp" "$lib" -Wl,-rpath,"$(dirname "$lib")" -o "$tmp/snippet$i" 2>"$tmp/err" &&
      timeout 120 "$tmp/snippet$i" >"$tmp/out" 2>>"$tmp/err" || ok=0
  else
    ok=1
    "$cxx" "$@" -fsyntax-only "$cpp" 2>"$tmp/err" || ok=0
  fi
  if [ $ok = 1 ]; then
    echo "ok   $where ($mode)"
  else
    echo "FAIL $where ($mode):"
    cat "$tmp/err"
    fail=1
  fi
done
[ $fail = 0 ] || { echo "some documentation snippets do not build or run" >&2; exit 1; }
echo "$n documentation snippets build"
