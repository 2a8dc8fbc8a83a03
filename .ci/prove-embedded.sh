#!/usr/bin/env bash
# Proves the default a newcomer gets: with neither DATABASE_URL nor REDIS_URL set, `make run` starts
# the project's own PostgreSQL (var/pg), migrates, seeds and serves, and /readyz answers 200 within
# WAIT_S seconds (default 300: a fresh clone also installs and builds the SPA first). Then it stops
# what it started, `make run`'s process group and the embedded server; non-zero exit otherwise.
# Free ports, so it runs beside a `make run` of yours.
set -euo pipefail
cd "$(dirname "$0")/.."
unset DATABASE_URL REDIS_URL CELERY_BROKER_URL
WAIT_S="${WAIT_S:-300}"
LOG=var/prove-embedded.log

make install >/dev/null
mkdir -p var
free_port() {
  .venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT="$(free_port)"
EMULATOR_PORT="$(free_port)"

# A session of its own, so one signal to its process group reaches make, honcho and the servers.
setsid make run PORT="$PORT" EMULATOR_PORT="$EMULATOR_PORT" >"$LOG" 2>&1 &
RUN=$!
stop() {
  kill -TERM -- "-$RUN" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 -- "-$RUN" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$RUN" 2>/dev/null || true
  make db-stop
}
trap stop EXIT

started=$SECONDS
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz")" = 200 ]; do
  if ! kill -0 "$RUN" 2>/dev/null; then
    echo "make run exited before /readyz answered; the end of $LOG:" >&2
    tail -40 "$LOG" >&2
    exit 1
  fi
  if (( SECONDS - started > WAIT_S )); then
    echo "/readyz did not answer 200 within ${WAIT_S} s; the end of $LOG:" >&2
    tail -40 "$LOG" >&2
    exit 1
  fi
  sleep 1
done
echo "embedded default: make run answered /readyz 200 after $((SECONDS - started)) s (port $PORT)"
