#!/usr/bin/env bash
# SPA budgets (issues 5 and 14), from the production build:
#  1. initial JavaScript, brotli-compressed as served (npm run size);
#  2. a month view of one pool with 1,000 bookings, API answered in the page (calendar-bench);
#  3. per route against a live LabGPU (gunicorn + WhiteNoise, a fresh PostgreSQL database with the
#     demo data and its weeks of history): bytes actually transferred (compressed), JS before first
#     paint, time to content, the request waterfall of the dashboard, calendar and usage pages, at
#     full speed and at 4× CPU slowdown. Timings move with the machine's load: it is printed.
#   bench/spa_performance.sh [--bookings 1000] [--runs 5] [--dry-run]
# --dry-run: seed the database and start the server as for 3, then stop; no build, no measurement.
set -euo pipefail
usage() { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; }
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then usage; exit 0; fi
source "$(dirname "$0")/lib/spa_server.sh"
# --runs also sets the route bench's runs per route and speed.
ROUTE_BENCH_ARGS=()
DRY_RUN=0
args=("$@")
for i in "${!args[@]}"; do
  [[ "${args[$i]}" == --runs ]] && ROUTE_BENCH_ARGS=(--runs "${args[$((i + 1))]}")
  [[ "${args[$i]}" == --dry-run ]] && DRY_RUN=1
done
# Every part runs even when one misses its budget; the script fails if any did.
status=0
if [[ $DRY_RUN == 0 ]]; then
  cd "$ROOT/frontend"
  test -d node_modules || npm ci --no-audit --no-fund --loglevel=error
  npm run --silent build >/dev/null
  npm run --silent size || status=1
  node scripts/calendar-bench.mjs "$@" || status=1
fi

spa_database spabench
spa_serve app
spa_wait app
cd "$ROOT/frontend"
bench=(node scripts/route-bench.mjs "${ROUTE_BENCH_ARGS[@]}")
if [[ $DRY_RUN == 1 ]]; then
  spa_dry_run app
  echo "  ${bench[*]}"
  exit 0
fi
uptime
E2E_BASE_URL="http://127.0.0.1:${PORT[app]}" E2E_USERS_JSON="$VAR/users.json" "${bench[@]}" || status=1
uptime
exit $status
