#!/usr/bin/env bash
# Before/after of `npm run bench:agent` on one machine, in one run: the two checkouts alternate
# A B A B … so that drift of a noisy machine hits both alike (absolute figures on this machine kind
# have moved by 30% between hours; compare the two sides of one run, never runs).
#
# usage: scripts/bench/ab-agent.sh BEFORE_CHECKOUT AFTER_CHECKOUT [ROUNDS=3]
# Environment: BENCH_AGENT_RUNS (default 7 here) and BENCH_AGENT_COMMITTERS (default
# embedded,instant,paused) pass through to each run.
# e.g.   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/ &&
#        scripts/bench/ab-agent.sh /tmp/before .
set -euo pipefail
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-3}
export BENCH_AGENT_RUNS=${BENCH_AGENT_RUNS:-7}
export BENCH_AGENT_COMMITTERS=${BENCH_AGENT_COMMITTERS:-embedded,instant,paused}

for round in $(seq 1 "$rounds"); do
  for side in before after; do
    checkout=$before
    [ "$side" = after ] && checkout=$after
    (cd "$checkout" && npx tsx scripts/bench.ts agent) | grep -E '^(embedded|instant|paused|redis)' | sed "s/^/round $round $side  /"
  done
done
