#!/usr/bin/env bash
# The dashboard's time to content of two SPA builds measured in the same minutes: the machine's
# load moves between runs, so one build measured now and another later says little. Seeds one
# fresh database (the demo with its weeks of history), serves each build from its own gunicorn and
# runs `frontend/scripts/route-bench.mjs --route /` against them in turn, A B A B …; prints each
# round's medians (full speed and 4× CPU slowdown) and the median over the rounds.
#   bench/spa_ab.sh DIST_A DIST_B [--rounds 3] [--runs 3] [--dry-run]
# DIST_A, DIST_B: folders holding a `npm run build` output (e.g. copies of frontend/dist).
# --dry-run: seed the database and start both servers, then stop; no measurement.
set -euo pipefail
usage() { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; }
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then usage; exit 0; fi
if [[ $# -lt 2 || "$1" == -* || "$2" == -* ]]; then usage >&2; exit 2; fi
A="$(realpath "$1")"
B="$(realpath "$2")"
shift 2
ROUNDS=3
RUNS=3
DRY_RUN=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib/spa_server.sh"
spa_database spaab
spa_serve A "$A"
spa_serve B "$B"
spa_wait A B
cd "$ROOT/frontend"
if [[ $DRY_RUN == 1 ]]; then
  spa_dry_run A B
  echo "  $ROUNDS rounds of A B: node scripts/route-bench.mjs --route / --runs $RUNS"
  exit 0
fi
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
