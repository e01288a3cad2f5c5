#!/bin/sh
# The breaker's scaling group alone: one breaker shared by 1, 2, 4, 8 and
# 16 threads (resil's count and time windows, recloser, failsafe and the
# bare call), the time per call per thread; the 2-thread failsafe ratio is
# in it. About 5 minutes on 16 cores once built (20 benchmarks of 1 s
# warm-up and 3 s measurement each, plus criterion's analysis).
#
#   resil-bench/scripts/scaling.sh OUT_DIR     build if needed, run, write OUT_DIR
#   resil-bench/scripts/scaling.sh --build     only build, into target/scaling/
#
# With --build first, the run needs no compiler or registry: it runs
# target/scaling/circuit_breaker (carry target/scaling to the machine).
# SCALING_FILTER narrows the run, e.g. '^success_threads/.*/(1|2)$' on a
# machine with two cores. OUT_DIR gets machine.txt (cores, CPU, commit), success_threads.txt
# (criterion's output), summary.txt (ns per call per thread and the ratios
# to failsafe and to one thread) and criterion/ (its data).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/target/scaling/circuit_breaker"

build() {
    cd "$root"
    cargo bench -p resil-bench --features bench --bench circuit_breaker --no-run \
        --message-format=json 2>/dev/null \
        | grep '"executable":"[^"]*circuit_breaker-[^"]*"' \
        | sed 's/.*"executable":"\([^"]*\)".*/\1/' | tail -n 1 > "$root/target/scaling.path" || true
    exe=$(cat "$root/target/scaling.path")
    [ -x "$exe" ] || { echo "scaling.sh: the bench did not build" >&2; exit 1; }
    mkdir -p "$root/target/scaling"
    cp "$exe" "$bin"
    rm -f "$root/target/scaling.path"
    echo "built $bin"
}

if [ "${1:-}" = "--build" ]; then
    build
    exit 0
fi
out=${1:?usage: $0 OUT_DIR | --build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -x "$bin" ] || build
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cores: $(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
    grep -m1 'model name' /proc/cpuinfo 2>/dev/null || true
    uname -srm
    (cd "$root" && git rev-parse HEAD 2>/dev/null) || true
} > "$out/machine.txt"
cat "$out/machine.txt"
cd "$root"
CRITERION_HOME="$out/criterion" "$bin" --bench --warm-up-time 1 --measurement-time 3 \
    "${SCALING_FILTER:-^success_threads/}" 2>&1 | tee "$out/success_threads.txt"
# criterion prints "success_threads/<name>/<n>", then (on that line or the
# next) "time: [low estimate high]"
awk '
    /^success_threads\// { id = $0; sub(/^success_threads\//, "", id); sub(/ +time:.*/, "", id) }
    /time: *\[/ {
        line = $0; sub(/.*time: *\[/, "", line); split(line, v, " ")
        t = v[3]; unit = v[4]
        if (unit == "ps") t /= 1000; else if (unit == "us" || unit == "µs") t *= 1000; else if (unit == "ms") t *= 1e6
        n = id; sub(/.*\//, "", n); who = id; sub(/\/[0-9]+$/, "", who)
        ns[who, n] = t; if (!(who in seen)) { seen[who] = 1; names[++k] = who }; counts[n] = 1
    }
    function row(title, kind,    i, j, w, x) {
        printf "\n%s\n%-20s", title, ""
        for (i = 1; i <= 5; i++) if (order[i] in counts) printf " %9s", order[i] " thr"
        printf "\n"
        for (j = 1; j <= k; j++) { w = names[j]; printf "%-20s", w
            for (i = 1; i <= 5; i++) if (order[i] in counts) {
                x = ns[w, order[i]]
                if (kind == 1) x = x / ns["failsafe", order[i]]
                if (kind == 2) x = x / ns[w, "1"]
                printf " %9.3f", x }
            printf "\n" }
    }
    END {
        split("1 2 4 8 16", order, " ")
        row("ns per call per thread", 0)
        if (("failsafe", "1") in ns || ("failsafe", "2") in ns) row("ratio to failsafe on as many threads", 1)
        row("ratio to the same on one thread", 2)
    }' "$out/success_threads.txt" > "$out/summary.txt"
cat "$out/summary.txt"
