#!/usr/bin/env bash
# SPA budgets (issues 5 and 14), from the production build:
#  1. initial JavaScript, brotli-compressed as served (npm run size);
#  2. a month view of one pool with 1,000 bookings, API answered in the page (calendar-bench);
#  3. per route against a live LabGPU (gunicorn + WhiteNoise, throwaway SQLite with the demo data):
#     bytes actually transferred, JS before first paint, time to content, also at 4× CPU slowdown.
#   bench/spa_performance.sh [--bookings 1000] [--runs 5]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
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
export LABGPU_SQLITE_PATH="$VAR/bench.sqlite3" LABGPU_VAR_DIR="$VAR" DJANGO_SECRET_KEY="bench-only-secret"
export LABGPU_THROTTLE_USER="100000/min"
unset DATABASE_URL
cd "$ROOT/backend"
"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py seed_demo --json > "$VAR/users.json"
"$ROOT/.venv/bin/gunicorn" config.wsgi --bind "127.0.0.1:$PORT" --workers 2 --log-level warning \
  > "$VAR/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$VAR"' EXIT
for _ in $(seq 1 50); do
  curl -fs "http://127.0.0.1:$PORT/api/schema/" >/dev/null && break
  sleep 0.2
done
cd "$ROOT/frontend"
uptime
E2E_BASE_URL="http://127.0.0.1:$PORT" E2E_USERS_JSON="$VAR/users.json" node scripts/route-bench.mjs || status=1
exit $status
