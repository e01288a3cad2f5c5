#!/bin/sh
# Every face of two trees in one sitting: the benchmarks both trees have,
# base and HEAD alternating (base, HEAD, HEAD, base), criterion's point
# estimate of each, and HEAD's mean over base's.
#
#   resil-bench/scripts/before-after.sh BASE_COMMIT OUT_DIR
#
# Builds BASE_COMMIT's benches in a worktree of its own (target/before-after/
# base, target directory target/before-after/target) and the checkout's own
# benches (the workspace's target directory), then runs them: about 40
# minutes on 2 cores once built. Run it on an idle machine. OUT_DIR gets
# runs.txt (one line a measurement: tree, benchmark, estimate) and
# summary.txt. BEFORE_AFTER_GROUPS narrows the run: lines of "bench
# filter", as in the default below.
set -eu
[ $# -eq 2 ] || { echo "usage: before-after.sh BASE_COMMIT OUT_DIR" >&2; exit 2; }
base=$1
out=$(mkdir -p "$2" && cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
work="$root/target/before-after"
groups=${BEFORE_AFTER_GROUPS:-"tower .
macros .
chain ^chain_ready_async|^layer_ready_async
rate_limiter ^rate_limiter/
circuit_breaker ^success/
time_limiter .
bulkhead ^bulkhead/(resil_call|resil_try_acquire_drop|tower|bare_call)
retry ."}
benches=$(echo "$groups" | awk '{printf "--bench %s ", $1}')

# build TREE_DIR TARGET_DIR LABEL: the benches' executables into $work/bin
build() {
    mkdir -p "$work/bin"
    # shellcheck disable=SC2086
    (cd "$1" && CARGO_TARGET_DIR="$2" cargo bench -p resil-bench --features bench \
        $benches --no-run --message-format=json 2>/dev/null) \
        | grep '"executable":"[^"]*/deps/[^"]*"' \
        | sed 's/.*"executable":"\([^"]*\)".*/\1/' \
        | while read -r exe; do
            name=$(basename "$exe" | sed 's/-[0-9a-f]*$//')
            cp "$exe" "$work/bin/$name-$3"
        done
}

if [ ! -d "$work/base" ]; then
    git -C "$root" worktree add --detach "$work/base" "$base" >/dev/null
fi
git -C "$work/base" checkout --quiet --detach "$base"
build "$work/base" "$work/target" base
build "$root" "${CARGO_TARGET_DIR:-$root/target}" head

: > "$out/runs.txt"
mkdir -p "$work/run"
cd "$work/run"
for tree in base head head base; do
    echo "$groups" | while read -r bench filter; do
        "$work/bin/$bench-$tree" --bench --warm-up-time 1 --measurement-time 3 "$filter" 2>/dev/null \
            | awk -v tree="$tree" '
                /^Benchmarking/ { next }
                /time: +\[/ {
                    line = $0
                    if ($1 != "time:") { name = $0; sub(/ +time:.*/, "", name) }
                    sub(/.*time: +\[[^ ]+ [^ ]+ /, "", line)
                    split(line, v, " ")
                    scale = (v[2] == "ps") ? 0.001 : (v[2] == "µs" || v[2] == "us") ? 1000 : 1
                    printf "%s\t%s\t%.3f\n", tree, name, v[1] * scale
                    next
                }
                /^[^ ].*\// { name = $0; sub(/ +$/, "", name) }
            ' >> "$out/runs.txt"
    done
done

awk -F '\t' '
    { if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
      sum[$2, $1] += $3; cnt[$2, $1]++
      if (!(($2, $1) in lo) || $3 < lo[$2, $1]) lo[$2, $1] = $3
      if ($3 > hi[$2, $1]) hi[$2, $1] = $3 }
    END {
        printf "%-55s %17s %17s %s\n", "benchmark (ns)", "base", "head", "head/base"
        for (i = 1; i <= n; i++) {
            b = order[i]
            if (!cnt[b, "base"] || !cnt[b, "head"]) continue
            printf "%-55s %7.2f–%-7.2f %7.2f–%-7.2f %.2f\n", b, lo[b, "base"], hi[b, "base"],
                lo[b, "head"], hi[b, "head"], (sum[b, "head"] / cnt[b, "head"]) / (sum[b, "base"] / cnt[b, "base"])
        }
    }' "$out/runs.txt" > "$out/summary.txt"
cat "$out/summary.txt"
