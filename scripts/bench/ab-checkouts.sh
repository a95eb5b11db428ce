#!/usr/bin/env bash
# Before/after on one machine, in one run: demo.echo over HTTP in Redis mode (AOF off), 1 client,
# against two checkouts, interleaved A B A B … so that drift of a noisy machine hits both alike.
# Each round starts a fresh redis-server and `scope serve` from the checkout, warms it up, then runs
# TOTAL sequential processes with ../shared/bench/floor/load.mjs and reads the server's CPU from /proc.
#
# usage: scripts/bench/ab-checkouts.sh BEFORE_CHECKOUT AFTER_CHECKOUT [ROUNDS=3] [TOTAL=1500]
# e.g.   git worktree add /tmp/before <commit> && (cd /tmp/before && npm ci) &&
#        scripts/bench/ab-checkouts.sh /tmp/before .
set -euo pipefail
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
rounds=${3:-3}
total=${4:-1500}
here=$(cd "$(dirname "$0")/../.." && pwd)
load=${BENCH_SHARED:-$here/../shared/bench}/floor/load.mjs
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

one() { # checkout label
  local port rport server t0 t1 out
  port=$(free_port)
  rport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --logfile "/tmp/ab-redis-$rport.log"
  for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  (cd "$1" && PORT=$port HOST=127.0.0.1 SCOPE_REDIS_URL=redis://127.0.0.1:$rport SCOPE_LOG_LEVEL=error exec node bin/scope.js serve >/dev/null) &
  server=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  node "$load" "http://127.0.0.1:$port" 1 600 >/dev/null
  t0=$(cpu_ticks "$server")
  out=$(node "$load" "http://127.0.0.1:$port" 1 "$total")
  t1=$(cpu_ticks "$server")
  kill -TERM "$server"
  wait "$server" 2>/dev/null || true
  redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
  # /proc ticks are 10 ms.
  node -e "const o=JSON.parse(process.argv[1]); console.log([process.argv[2].padEnd(7), ((process.argv[4]-process.argv[3])*10/o.ok).toFixed(2).padStart(8), o.p50.toFixed(2).padStart(7), o.p99.toFixed(2).padStart(7), String(o.failures).padStart(4)].join('  '))" "$out" "$2" "$t0" "$t1"
}

echo "# demo.echo, Redis AOF off, 1 client, $total sequential after 600 warm-up, $rounds rounds"
echo "# before: $before ($(git -C "$before" rev-parse --short HEAD))  after: $after ($(git -C "$after" rev-parse --short HEAD))"
echo "side     cpu ms/p   p50 ms  p99 ms  fail"
for _ in $(seq 1 "$rounds"); do
  one "$before" before
  one "$after" after
done
