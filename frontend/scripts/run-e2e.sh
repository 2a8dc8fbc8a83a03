#!/usr/bin/env bash
# The browser suite against a real backend: a fresh database with the demo data, gunicorn serving
# the built SPA and the API on one origin, Debian's Chromium driven by playwright-core.
# On DATABASE_URL's server, else on the project's own PostgreSQL (var/pg, started here). Arguments
# pick specs by name (e.g. `run-e2e.sh pages`); none runs them all.
#
# E2E_SHARDS=N (default 2) splits the specs over N servers, each with its own copy of the demo
# database, mail folder, OpenID Provider and Redis database, run side by side: most of a spec's
# time is waiting on the page, which overlaps. E2E_SHARDS=1 runs them in one line, as before.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="$ROOT/.venv/bin/python"
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

if [[ -z "${DATABASE_URL:-}" ]]; then
  "$PY" "$ROOT/backend/config/embedded_db.py" start
  DATABASE_URL="$("$PY" "$ROOT/backend/config/embedded_db.py" url)"
fi
SHARDS="${E2E_SHARDS:-2}"
# One spec named: no point in a second server.
[[ $# -eq 1 ]] && SHARDS=1
BASE_DB_URL="$DATABASE_URL"
BASE_REDIS_URL="${REDIS_URL:-}"
export DJANGO_SECRET_KEY="e2e-only-secret" LABGPU_THROTTLE_USER="100000/min"
export DJANGO_EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend"
# Chat channels may post to the specs' local receivers (chat.spec.mjs).
export LABGPU_CHAT_ALLOW_LOOPBACK=1
# Every heartbeat becomes a chart sample (utilisation.spec.mjs posts a few in a row).
export LABGPU_UTILISATION_SAMPLE_MIN_S=0
export LABGPU_PROVIDER_TOKEN_EMULATOR="e2e-emulator-token"

# Shard k's settings: its database (labgpu_alice -> labgpu_alice_e2e, _e2e2, …, so two checkouts
# sharing one server never drop each other's run), folders, ports and Redis database.
shard_env() {
  local k=$1 suffix=e2e
  [[ $k -gt 1 ]] && suffix="e2e$k"
  VAR="$ROOT/var/$suffix"
  PORT="$(free_port)"
  DATABASE_URL="$("$PY" "$ROOT/backend/config/fresh_db.py" "$BASE_DB_URL" "$suffix" --url-only)"
  if [[ -n "$BASE_REDIS_URL" && $k -gt 1 ]]; then
    # The next Redis database along: the login throttle and the cache stay each server's own.
    if [[ $BASE_REDIS_URL =~ ^(.*)/([0-9]+)$ ]]; then
      REDIS_URL="${BASH_REMATCH[1]}/$(((BASH_REMATCH[2] + k - 1) % 16))"
    else
      REDIS_URL="${BASE_REDIS_URL%/}/$((k - 1))"
    fi
    export REDIS_URL
  fi
  mkdir -p "$VAR"
  export DATABASE_URL VAR PORT LABGPU_VAR_DIR="$VAR"
  # Mail goes to files the specs read (E2E_MAIL_DIR); links in it point at this server.
  export LABGPU_EMAIL_FILE_PATH="$VAR/mail" E2E_MAIL_DIR="$VAR/mail" LABGPU_PUBLIC_URL="http://127.0.0.1:$PORT"
  # volume-changes.spec.mjs starts an emulator on E2E_EMULATOR_PORT and points the demo account at
  # it, so the server's volume delete reaches a provider: only that origin is allowed (the demo's
  # own emulator port stays refused, as the other specs expect), with any non-empty token.
  E2E_EMULATOR_PORT="$(free_port)"
  export E2E_EMULATOR_PORT LABGPU_PROVIDER_ALLOWED_BASE_URLS="http://127.0.0.1:$E2E_EMULATOR_PORT"
}

# The demo data once, in shard 1's database; the other shards copy it (CREATE DATABASE … TEMPLATE).
rm -rf "$ROOT"/var/e2e*/mail
shard_env 1
"$PY" "$ROOT/backend/config/fresh_db.py" "$BASE_DB_URL" e2e >/dev/null
cd "$ROOT/backend"
"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py seed_demo --json > "$ROOT/var/e2e/users.json"
for k in $(seq 2 "$SHARDS"); do
  "$PY" "$ROOT/backend/config/fresh_db.py" "$BASE_DB_URL" "e2e$k" --copy-of e2e >/dev/null
done

PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT

# Start shard k's OpenID Provider and server, then run its specs. Runs in a subshell.
run_shard() {
  local k=$1
  shard_env "$k"
  cd "$ROOT/backend"
  local op="" server
  # A real OpenID Provider (backend/labgpu/sso/tests/op) for the SSO spec; LabGPU signs in with
  # it. Without Node the SSO spec skips itself (E2E_OIDC_ISSUER unset) and the rest run as before.
  if command -v node >/dev/null; then
    "$PY" -m labgpu.sso.tests.op_server "http://127.0.0.1:$PORT" > "$VAR/op.log" 2>&1 &
    op=$!
    for _ in $(seq 1 150); do grep -q '^OP ready ' "$VAR/op.log" && break; sleep 0.2; done
    if grep -q '^OP ready ' "$VAR/op.log"; then
      export LABGPU_OIDC_ISSUER="$(sed -n 's/^OP ready //p' "$VAR/op.log")"
      export LABGPU_OIDC_CLIENT_ID=labgpu LABGPU_OIDC_CLIENT_SECRET=labgpu-test-secret \
        LABGPU_OIDC_NAME="Test University" LABGPU_OIDC_GROUPS_CLAIM=groups \
        LABGPU_OIDC_SCOPES="openid email profile groups" E2E_OIDC_ISSUER="$LABGPU_OIDC_ISSUER"
    else
      echo "The test OpenID Provider did not start ($VAR/op.log); the SSO spec will skip." >&2
    fi
  fi
  "$ROOT/.venv/bin/gunicorn" config.wsgi --bind "127.0.0.1:$PORT" --workers 2 \
    --log-level warning > "$VAR/server.log" 2>&1 &
  server=$!
  trap 'kill $server $op 2>/dev/null || true' EXIT
  for _ in $(seq 1 50); do
    # /healthz, not the schema: generating the schema can outlast a worker's timeout on a busy machine.
    curl -fs --max-time 10 "http://127.0.0.1:$PORT/healthz" >/dev/null && break
    sleep 0.2
  done
  cd "$ROOT/frontend"
  E2E_BASE_URL="http://127.0.0.1:$PORT" E2E_USERS_JSON="$ROOT/var/e2e/users.json" \
    E2E_SHARD="$k/$SHARDS" node e2e/run.mjs "${@:2}"
}

if [[ $SHARDS -eq 1 ]]; then
  run_shard 1 "$@"
  exit
fi
# Each shard's lines carry its number; each shard's summary is printed again at the end.
for k in $(seq 1 "$SHARDS"); do
  ( run_shard "$k" "$@" 2>&1 | tee "$ROOT/var/e2e-shard$k.log" | sed -u "s/^/[e2e $k\/$SHARDS] /"; exit "${PIPESTATUS[0]}" ) &
  PIDS+=($!)
done
status=0
for k in $(seq 1 "$SHARDS"); do
  wait "${PIDS[$((k - 1))]}" || status=1
done
for k in $(seq 1 "$SHARDS"); do
  echo "== e2e shard $k/$SHARDS =="
  grep -E '^(✖|ℹ (tests|pass|fail|skipped|duration_ms))' "$ROOT/var/e2e-shard$k.log" || true
done
exit $status
