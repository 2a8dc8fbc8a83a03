#!/usr/bin/env bash
# SPA budgets (issues 5 and 14), from the production build:
#  1. initial JavaScript, brotli-compressed as served (npm run size);
#  2. a month view of one pool with 1,000 bookings, API answered in the page (calendar-bench);
#  3. per route against a live LabGPU (gunicorn + WhiteNoise, a fresh PostgreSQL database with the
#     demo data and its weeks of history): bytes actually transferred (compressed), JS before first
#     paint, time to content, the request waterfall of the dashboard, calendar and usage pages, at
#     full speed and at 4× CPU slowdown. Timings move with the machine's load: it is printed.
#   bench/spa_performance.sh [--bookings 1000] [--runs 5]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# --runs also sets the route bench's runs per route and speed.
ROUTE_BENCH_ARGS=()
args=("$@")
for i in "${!args[@]}"; do
  [[ "${args[$i]}" == --runs ]] && ROUTE_BENCH_ARGS=(--runs "${args[$((i + 1))]}")
done
cd "$ROOT/frontend"
test -d node_modules || npm ci --no-audit --no-fund --loglevel=error
npm run --silent build >/dev/null
# Every part runs even when one misses its budget; the script fails if any did.
status=0
npm run --silent size || status=1
node scripts/calendar-bench.mjs "$@" || status=1

PY="$ROOT/.venv/bin/python"
VAR="$(mktemp -d)"
PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export LABGPU_VAR_DIR="$VAR" DJANGO_SECRET_KEY="bench-only-secret"
export LABGPU_THROTTLE_USER="100000/min"
# A fresh database beside DATABASE_URL's (labgpu_alice -> labgpu_alice_spabench), else the
# project's own PostgreSQL; never another checkout's data.
if [[ -z "${DATABASE_URL:-}" ]]; then
  "$PY" "$ROOT/backend/config/embedded_db.py" start
  DATABASE_URL="$("$PY" "$ROOT/backend/config/embedded_db.py" url)"
fi
DATABASE_URL="$("$PY" - "$DATABASE_URL" <<'PY'
import sys
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

url = urlsplit(sys.argv[1])
name = f"{url.path.lstrip('/') or 'labgpu'}_spabench"
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
"$ROOT/.venv/bin/gunicorn" config.wsgi --bind "127.0.0.1:$PORT" --workers 2 --log-level warning \
  > "$VAR/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$VAR"' EXIT
for _ in $(seq 1 50); do
  curl -fs --max-time 10 "http://127.0.0.1:$PORT/healthz" >/dev/null && break
  sleep 0.2
done
cd "$ROOT/frontend"
uptime
E2E_BASE_URL="http://127.0.0.1:$PORT" E2E_USERS_JSON="$VAR/users.json" node scripts/route-bench.mjs "${ROUTE_BENCH_ARGS[@]}" || status=1
uptime
exit $status
