#!/usr/bin/env bash
# clang-tidy over every public header (include/ember/**.h) with the lifetime checks: dangling
# handles, use after move, inner pointers of destroyed objects, stack addresses escaping, and
# clang's -Wdangling family. Any finding fails. A canary with a use after move must be caught
# first, so a run that checks nothing (a wrong filter, a missing check) fails too.
# Usage: scripts/tidy-headers.sh [extra compiler flags...]   (ctest: lint/clang_tidy_headers)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-tidy >/dev/null || { echo "clang-tidy is not installed (scripts/install-deps.sh)" >&2; exit 1; }
checks='-*,bugprone-dangling-handle,bugprone-use-after-move,bugprone-move-forwarding-reference,'
checks+='clang-analyzer-cplusplus.InnerPointer,clang-analyzer-cplusplus.Move,'
checks+='clang-analyzer-cplusplus.NewDelete,clang-analyzer-core.StackAddressEscape,'
checks+='performance-move-const-arg,clang-diagnostic-dangling*,clang-diagnostic-return-stack-address'
flags=(-std=c++20 -Iinclude -Wdangling -Wdangling-gsl -Wreturn-stack-address "$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tidy() {  # tidy FILE HEADER_FILTER
  clang-tidy "$1" --quiet -header-filter="$2" -checks="$checks" -warnings-as-errors='*' \
    -- "${flags[@]}" -I"$tmp/include"
}

mkdir -p "$tmp/include/canary"
cat >"$tmp/include/canary/canary.h" <<'EOF'
#include <string>
#include <utility>
inline std::string canary(std::string s) {
  std::string t = std::move(s);
  return s + t;  // use after move
}
EOF
printf '#include <canary/canary.h>\n' >"$tmp/canary.cpp"
if tidy "$tmp/canary.cpp" '.*/canary/.*' >"$tmp/canary.log" 2>&1; then
  echo "clang-tidy did not report the canary's use after move:" >&2
  cat "$tmp/canary.log" >&2
  exit 1
fi

# One translation unit per header, so each compiles on its own (includes what it uses).
n=0
while IFS= read -r h; do
  printf '#include "%s"\n' "$PWD/$h" >"$tmp/h$n.cpp"
  n=$((n + 1))
done < <(find include/ember -name '*.h' | sort)
[ "$n" -gt 0 ] || { echo "no public headers found" >&2; exit 1; }
fail=0
for ((i = 0; i < n; i++)); do
  if ! tidy "$tmp/h$i.cpp" "$PWD/include/ember/.*" >"$tmp/h$i.log" 2>&1; then
    cat "$tmp/h$i.log"
    fail=1
  fi
done
[ "$fail" = 0 ] || { echo "clang-tidy found problems in the public headers" >&2; exit 1; }
echo "clang-tidy: $n public headers clean (canary caught)"
