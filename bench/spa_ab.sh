#!/usr/bin/env bash
# The dashboard's time to content of two SPA builds measured in the same minutes: the machine's
# load moves between runs, so one build measured now and another later says little. Seeds one
# fresh database (the demo with its weeks of history), serves each build from its own gunicorn and
# runs `frontend/scripts/route-bench.mjs --route /` against them in turn, A B A B …; prints each
# round's medians (full speed and 4× CPU slowdown) and the median over the rounds.
#   bench/spa_ab.sh DIST_A DIST_B [--rounds 3] [--runs 3]
# DIST_A, DIST_B: folders holding a `npm run build` output (e.g. copies of frontend/dist).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
A="$(realpath "$1")"
B="$(realpath "$2")"
shift 2
ROUNDS=3
RUNS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
PY="$ROOT/.venv/bin/python"
VAR="$(mktemp -d)"
export LABGPU_VAR_DIR="$VAR" DJANGO_SECRET_KEY="bench-only-secret" LABGPU_THROTTLE_USER="100000/min"
if [[ -z "${DATABASE_URL:-}" ]]; then
  "$PY" "$ROOT/backend/config/embedded_db.py" start
  DATABASE_URL="$("$PY" "$ROOT/backend/config/embedded_db.py" url)"
fi
# A fresh database beside DATABASE_URL's (labgpu_alice -> labgpu_alice_spaab).
DATABASE_URL="$("$PY" - "$DATABASE_URL" <<'PY'
import sys
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

url = urlsplit(sys.argv[1])
name = f"{url.path.lstrip('/') or 'labgpu'}_spaab"
with psycopg.connect(url._replace(path="/postgres").geturl(), autocommit=True) as conn:
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
print(url._replace(path=f"/{name}").geturl())
PY
)"
export DATABASE_URL
cd "$ROOT/backend"
"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py seed_demo --json > "$VAR/users.json"
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
declare -A PORT SERVER
for build in A B; do
  PORT[$build]="$(free_port)"
  dist="$A"; [[ $build == B ]] && dist="$B"
  LABGPU_FRONTEND_DIST="$dist" "$ROOT/.venv/bin/gunicorn" config.wsgi --bind "127.0.0.1:${PORT[$build]}" \
    --workers 2 --log-level warning > "$VAR/server-$build.log" 2>&1 &
  SERVER[$build]=$!
done
trap 'kill ${SERVER[A]} ${SERVER[B]} 2>/dev/null || true; rm -rf "$VAR"' EXIT
for build in A B; do
  for _ in $(seq 1 50); do
    curl -fs --max-time 10 "http://127.0.0.1:${PORT[$build]}/healthz" >/dev/null && break
    sleep 0.2
  done
done
cd "$ROOT/frontend"
for round in $(seq 1 "$ROUNDS"); do
  for build in A B; do
    # route-bench exits 1 when a budget is missed: that is a result here, not an error.
    E2E_BASE_URL="http://127.0.0.1:${PORT[$build]}" E2E_USERS_JSON="$VAR/users.json" \
      node scripts/route-bench.mjs --route / --runs "$RUNS" > "$VAR/$build-$round.json" || true
    echo "round $round, build $build done, $(uptime | sed 's/.*load/load/')" >&2
  done
done
node - "$VAR" "$ROUNDS" "$A" "$B" <<'JS'
const { readFileSync } = require('node:fs')
const [dir, rounds, distA, distB] = [process.argv[2], Number(process.argv[3]), process.argv[4], process.argv[5]]
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const build of ['A', 'B']) {
  const rows = []
  for (let r = 1; r <= rounds; r++) rows.push(JSON.parse(readFileSync(`${dir}/${build}-${r}.json`, 'utf8')).results)
  const pick = (rate, key) => rows.map((res) => res.find((x) => x.cpuSlowdown === rate)[key])
  const line = (rate) => {
    const content = pick(rate, 'contentMs')
    const quotas = pick(rate, 'secondaryPanelsMs')
    return `CPU ${rate}×: content ${content.join(', ')} ms (median ${median(content)}), quota panel ${quotas.join(', ')} ms (median ${median(quotas)})`
  }
  console.log(`${build} ${build === 'A' ? distA : distB}\n  ${line(1)}\n  ${line(4)}\n  JS before first paint ${pick(4, 'jsBeforePaintKB').join(', ')} KB; all bytes ${pick(4, 'totalKB').join(', ')} KB`)
}
JS
