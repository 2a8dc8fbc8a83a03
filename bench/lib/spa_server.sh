# Sourced by the SPA benches (spa_performance.sh, spa_ab.sh): a live LabGPU to measure against,
# on a fresh PostgreSQL database with the demo data and its weeks of history, served by gunicorn
# (+ WhiteNoise) on free 127.0.0.1 ports. Sets ROOT, PY and VAR (a temporary folder: users.json,
# server logs), prints the commit and command line, and on exit prints what else loaded the machine
# while the bench ran (a WARNING when others were busy), stops the servers it started, removes VAR.
#   source "$(dirname "$0")/lib/spa_server.sh"
#   spa_database spabench        # DATABASE_URL's name + _spabench, migrated and seeded
#   spa_serve A [DIST]           # gunicorn for build A (LABGPU_FRONTEND_DIST=DIST), port PORT[A]
#   spa_wait A …                 # until each answers /healthz
#   spa_dry_run A …              # --dry-run: check each answers, say what the bench would run
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="$ROOT/.venv/bin/python"
VAR="$(mktemp -d)"
export LABGPU_VAR_DIR="$VAR" DJANGO_SECRET_KEY="bench-only-secret" LABGPU_THROTTLE_USER="100000/min"
declare -A PORT=() SERVER=()
# The commit and command now; at exit, what else loaded the machine meanwhile (bench/lib/machine.py).
"$PY" "$ROOT/bench/lib/machine.py" start "$VAR/machine.json" --pid $$
trap '"$PY" "$ROOT/bench/lib/machine.py" stop "$VAR/machine.json" || true
  [[ ${#SERVER[@]} -eq 0 ]] || kill "${SERVER[@]}" 2>/dev/null || true; rm -rf "$VAR"' EXIT

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A fresh database beside DATABASE_URL's (labgpu_alice -> labgpu_alice_<suffix>; each bench its
# own suffix, so two can run at once), else beside the project's own PostgreSQL; never another
# checkout's data. Exports DATABASE_URL; the demo's users with tokens land in $VAR/users.json.
spa_database() {
  local suffix="$1"
  if [[ -z "${DATABASE_URL:-}" ]]; then
    "$PY" "$ROOT/backend/config/embedded_db.py" start
    DATABASE_URL="$("$PY" "$ROOT/backend/config/embedded_db.py" url)"
  fi
  DATABASE_URL="$("$PY" "$ROOT/backend/config/fresh_db.py" "$DATABASE_URL" "$suffix")"
  export DATABASE_URL
  # Mail to files, as in the e2e run: the console backend would print it into users.json.
  export DJANGO_EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend" LABGPU_EMAIL_FILE_PATH="$VAR/mail"
  (cd "$ROOT/backend" && "$PY" manage.py migrate --noinput >/dev/null \
    && "$PY" manage.py seed_demo --json > "$VAR/users.json")
}

# gunicorn for one build, its log in $VAR/server-<name>.log; DIST: the SPA build it serves
# (LABGPU_FRONTEND_DIST), default frontend/dist.
spa_serve() {
  local name="$1" dist="${2:-}"
  PORT[$name]="$(free_port)"
  (
    cd "$ROOT/backend"
    [[ -z "$dist" ]] || export LABGPU_FRONTEND_DIST="$dist"
    exec "$ROOT/.venv/bin/gunicorn" config.wsgi --bind "127.0.0.1:${PORT[$name]}" --workers 2 \
      --log-level warning > "$VAR/server-$name.log" 2>&1
  ) &
  SERVER[$name]=$!
}

spa_wait() {
  local name
  for name in "$@"; do
    for _ in $(seq 1 50); do
      curl -fs --max-time 10 "http://127.0.0.1:${PORT[$name]}/healthz" >/dev/null && break
      sleep 0.2
    done
  done
}

# A bench's --dry-run: its setup worked (each server answers, the demo users are there); it then
# prints what it would run and stops, measuring nothing.
spa_dry_run() {
  local name users
  for name in "$@"; do
    curl -fs --max-time 10 "http://127.0.0.1:${PORT[$name]}/healthz" >/dev/null
  done
  users="$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["users"]))' \
    "$VAR/users.json")"
  echo "dry run: $users demo users in $(basename "$DATABASE_URL"); serving:$(
    for name in "$@"; do printf ' %s on port %s' "$name" "${PORT[$name]}"; done); would run:"
}
