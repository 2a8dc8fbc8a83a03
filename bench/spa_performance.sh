#!/usr/bin/env bash
# SPA budgets (issue 5): initial JavaScript gzipped, and a month view of one pool with 1,000
# bookings rendered in Debian's Chromium from the production build (API answered in the page).
#   bench/spa_performance.sh [--bookings 1000] [--runs 5]
set -euo pipefail
cd "$(dirname "$0")/../frontend"
test -d node_modules || npm ci --no-audit --no-fund --loglevel=error
npm run --silent build >/dev/null
npm run --silent size
node scripts/calendar-bench.mjs "$@"
