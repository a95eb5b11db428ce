#!/usr/bin/env bash
# Memory one demo.echo tree takes in Redis: runs N processes (4 clients) against `scope serve` from CHECKOUT
# on a fresh redis-server (AOF off) and prints the mean MEMORY USAGE of the event logs and the heads.
# usage: scripts/bench/log-memory.sh CHECKOUT [N=300]   (compare two checkouts by running it on each)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
co=$1; n=${2:-300}
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
port=$(free_port); rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --logfile /tmp/logmem-$rport.log
for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
(cd "$co" && PORT=$port HOST=127.0.0.1 SCOPE_REDIS_URL=redis://127.0.0.1:$rport SCOPE_LOG_LEVEL=error exec node bin/scope.js serve >/dev/null) &
server=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
node ${BENCH_SHARED:-$here/../shared/bench}/floor/load.mjs "http://127.0.0.1:$port" 4 "$n" >/dev/null
redis-cli -p "$rport" --scan --pattern '*:events' | while read -r k; do redis-cli -p "$rport" memory usage "$k" samples 0; done | awk -v n="$n" '{s+=$1} END {printf "event logs: %d keys, %.0f bytes per tree\n", NR, s/NR}'
redis-cli -p "$rport" --scan --pattern '*:head' | head -200 | while read -r k; do redis-cli -p "$rport" memory usage "$k" samples 0; done | awk '{s+=$1} END {printf "heads: %.0f bytes per tree\n", s/NR}'
kill $server; wait $server 2>/dev/null || true
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
