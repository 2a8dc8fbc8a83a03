#!/usr/bin/env bash
# The browser suite against a real backend: a fresh database with the demo data, gunicorn serving
# the built SPA and the API on one origin, Debian's Chromium driven by playwright-core.
# On DATABASE_URL's server, else on the project's own PostgreSQL (var/pg, started here). Arguments
# pick specs by name (e.g. `run-e2e.sh pages`); none runs them all.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="$ROOT/.venv/bin/python"
VAR="$ROOT/var/e2e"
mkdir -p "$VAR"
PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

if [[ -z "${DATABASE_URL:-}" ]]; then
  "$PY" "$ROOT/backend/config/embedded_db.py" start
  DATABASE_URL="$("$PY" "$ROOT/backend/config/embedded_db.py" url)"
fi
# A fresh database named after DATABASE_URL's own (labgpu_alice -> labgpu_alice_e2e), so two
# checkouts sharing one server never drop each other's browser run.
DATABASE_URL="$("$PY" "$ROOT/backend/config/fresh_db.py" "$DATABASE_URL" e2e)"
export DATABASE_URL
export DJANGO_SECRET_KEY="e2e-only-secret" LABGPU_THROTTLE_USER="100000/min" LABGPU_VAR_DIR="$VAR"
# Mail goes to files the specs read (E2E_MAIL_DIR); links in it point at this server.
rm -rf "$VAR/mail"
export DJANGO_EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend" LABGPU_EMAIL_FILE_PATH="$VAR/mail"
export E2E_MAIL_DIR="$VAR/mail" LABGPU_PUBLIC_URL="http://127.0.0.1:$PORT"
# Chat channels may post to the specs' local receivers (chat.spec.mjs).
export LABGPU_CHAT_ALLOW_LOOPBACK=1
# volume-changes.spec.mjs starts an emulator on E2E_EMULATOR_PORT and points the demo account at
# it, so the server's volume delete reaches a provider: only that origin is allowed (the demo's
# own emulator port stays refused, as the other specs expect), with any non-empty token.
E2E_EMULATOR_PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export E2E_EMULATOR_PORT LABGPU_PROVIDER_TOKEN_EMULATOR="e2e-emulator-token"
export LABGPU_PROVIDER_ALLOWED_BASE_URLS="http://127.0.0.1:$E2E_EMULATOR_PORT"
# Every heartbeat becomes a chart sample (utilisation.spec.mjs posts a few in a row).
export LABGPU_UTILISATION_SAMPLE_MIN_S=0

cd "$ROOT/backend"
# A real OpenID Provider (backend/labgpu/sso/tests/op) for the SSO spec; LabGPU signs in with it.
# Without Node the SSO spec skips itself (E2E_OIDC_ISSUER unset) and the rest run as before.
OP=""
if command -v node >/dev/null; then
  "$PY" -m labgpu.sso.tests.op_server "http://127.0.0.1:$PORT" > "$VAR/op.log" 2>&1 &
  OP=$!
  trap 'kill $OP 2>/dev/null || true' EXIT
  for _ in $(seq 1 150); do grep -q '^OP ready ' "$VAR/op.log" && break; sleep 0.2; done
  if grep -q '^OP ready ' "$VAR/op.log"; then
    export LABGPU_OIDC_ISSUER="$(sed -n 's/^OP ready //p' "$VAR/op.log")"
    export LABGPU_OIDC_CLIENT_ID=labgpu LABGPU_OIDC_CLIENT_SECRET=labgpu-test-secret \
      LABGPU_OIDC_NAME="Test University" LABGPU_OIDC_GROUPS_CLAIM=groups \
      LABGPU_OIDC_SCOPES="openid email profile groups" E2E_OIDC_ISSUER="$LABGPU_OIDC_ISSUER"
  else
    echo "The test OpenID Provider did not start (var/e2e/op.log); the SSO spec will skip." >&2
  fi
fi
"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py seed_demo --json > "$VAR/users.json"
"$ROOT/.venv/bin/gunicorn" config.wsgi --bind "127.0.0.1:$PORT" --workers 2 \
  --log-level warning > "$VAR/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER ${OP} 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  # /healthz, not the schema: generating the schema can outlast a worker's timeout on a busy machine.
  curl -fs --max-time 10 "http://127.0.0.1:$PORT/healthz" >/dev/null && break
  sleep 0.2
done

cd "$ROOT/frontend"
E2E_BASE_URL="http://127.0.0.1:$PORT" E2E_USERS_JSON="$VAR/users.json" npm run test:e2e -- "$@"
