# LabGPU — one entry point for people, scripts and CI. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PORT ?= 8000
EMULATOR_PORT ?= 8010
CHAT_SINK_PORT ?= 8026
# The emulator's own default is a realistic GPU boot (minutes); the demo shortens it, and says so.
EMULATOR_BOOT_DELAY ?= 20
VENV ?= .venv
BACKEND := backend
# The first Python >= 3.12 found: $(PYTHON) if given, then python3.13/3.12 on PATH, then pyenv's.
PYTHON ?= $(shell for p in python3.13 python3.12 python3 \
	$$(ls -d $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
	  command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' \
	  2>/dev/null && { command -v $$p; break; }; done)
PY := $(CURDIR)/$(VENV)/bin/python
# Parallel workers for the quick tests (`make test TEST_WORKERS=0` runs them in one process).
TEST_WORKERS ?= auto
# Parallel workers for the slow tests (live workers, servers, crash bounds); 0: one process.
SLOW_TEST_WORKERS ?= 2
MANAGE := cd $(BACKEND) && $(PY) manage.py
MANAGE_AT_EMULATOR = cd $(BACKEND) && EMULATOR_PORT=$(EMULATOR_PORT) CHAT_SINK_PORT=$(CHAT_SINK_PORT) $(PY) manage.py
STAMP := $(VENV)/.installed
# Without DATABASE_URL, the project's own PostgreSQL (backend/config/embedded_db.py) serves the data
# from var/pg; `make db` starts it. The demo stamp lives with the data it describes.
# Run by path, not `-m config.…`: the config package imports Celery, seconds on a busy machine.
EMBEDDED_DB := $(PY) $(BACKEND)/config/embedded_db.py
SEEDED := $(if $(DATABASE_URL),var/.demo-seeded-pg,var/pg/.demo-seeded)
HAS_FRONTEND := $(wildcard frontend/package.json)
# `make run`'s idle demo node: TAG=N for the emulator, written by seed_demo --live on each start
DEMO_IDLE := var/demo-idle-after

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): backend/requirements.lock backend/pyproject.toml $(wildcard agent/pyproject.toml) \
	  $(wildcard backend/cli/pyproject.toml)
	@test -n "$(PYTHON)" || { echo "No Python >= 3.12 found; pass PYTHON=/path/to/python3.12"; exit 1; }
	@$(MAKE) --no-print-directory system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "uv>=0.5"
	$(VENV)/bin/uv pip install --python $(PY) --quiet -r backend/requirements.lock
	$(VENV)/bin/uv pip install --python $(PY) --quiet --no-deps -e backend \
	  $(if $(wildcard agent/pyproject.toml),-e agent) $(if $(wildcard backend/cli/pyproject.toml),-e backend/cli)
	@touch $@

.PHONY: install
install: $(STAMP) ## Create the virtualenv and install the locked dependencies

# python-ldap (LDAP sign-in) has no wheels: it compiles against libldap and libsasl2, whose
# headers Debian ships in libldap2-dev and libsasl2-dev. Installed here when missing and root.
LDAP_HEADERS := /usr/include/ldap.h /usr/include/sasl/sasl.h
.PHONY: system-deps
system-deps: ## Install the C headers python-ldap builds against (Debian/Ubuntu, as root)
	@missing=0; for h in $(LDAP_HEADERS); do test -f $$h || missing=1; done; \
	if [ $$missing = 1 ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing libldap2-dev libsasl2-dev (python-ldap builds against them)"; \
	    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get -o DPkg::Lock::Timeout=600 install -y -qq libldap2-dev libsasl2-dev gcc >/dev/null; \
	  else \
	    echo "python-ldap needs libldap and libsasl2 headers: apt-get install libldap2-dev" \
	      "libsasl2-dev (Debian/Ubuntu) or openldap-devel cyrus-sasl-devel (Fedora)"; exit 1; \
	  fi; \
	fi
	@# The statement PDF tests embed DejaVu and Noto CJK; the translation test runs gettext's tools.
	@pkgs=""; test -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf || pkgs="$$pkgs fonts-dejavu-core"; \
	test -f /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc || pkgs="$$pkgs fonts-noto-cjk"; \
	command -v msgmerge >/dev/null 2>&1 || pkgs="$$pkgs gettext"; \
	if [ -n "$$pkgs" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$pkgs (statement PDFs, translations)"; \
	    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get -o DPkg::Lock::Timeout=600 install -y -qq $$pkgs >/dev/null; \
	  else \
	    echo "the tests need$$pkgs: apt-get install$$pkgs (Debian/Ubuntu)"; exit 1; \
	  fi; \
	fi

.PHONY: lock
lock: ## Re-resolve backend/requirements.lock from pyproject.toml files
	$(VENV)/bin/uv pip compile --quiet --python-version 3.12 --extra test --universal \
	  backend/pyproject.toml $(if $(wildcard agent/pyproject.toml),agent/pyproject.toml) \
	  $(if $(wildcard backend/cli/pyproject.toml),backend/cli/pyproject.toml) \
	  -o backend/requirements.lock

.PHONY: db
db: install ## Start the project's own PostgreSQL (var/pg) unless DATABASE_URL names a server
ifeq ($(DATABASE_URL),)
	@$(EMBEDDED_DB) start
endif

.PHONY: db-stop
db-stop: ## Stop the project's own PostgreSQL (its data stays in var/pg)
	@if [ -x $(PY) ]; then $(EMBEDDED_DB) stop; fi

.PHONY: migrate
migrate: db ## Apply database migrations
	@mkdir -p var
	$(MANAGE) migrate --noinput

.PHONY: manage
manage: db ## Run manage.py: make manage ARGS="seed_demo --json"
	@mkdir -p var
	$(MANAGE) $(ARGS)

.PHONY: frontend
frontend: ## Build the SPA into frontend/dist (Django serves it at /)
ifneq ($(HAS_FRONTEND),)
	cd frontend && { test -d node_modules || npm ci --no-audit --no-fund; } && npm run build
else
	@echo "No frontend yet; the API is served alone."
endif

.PHONY: run
run: migrate frontend ## Migrate, load demo data once, serve http://127.0.0.1:$(PORT) with worker and emulator
	@test -f $(SEEDED) || { $(MANAGE_AT_EMULATOR) seed_demo && touch $(CURDIR)/$(SEEDED); }
	@# The demo provider follows this start's emulator port, seeded before or not; bookings that
	@# run now start unless the last ones still run. One goes idle: seed_demo names its droplet
	@# tag in $(DEMO_IDLE), which the emulator reads as LABGPU_EMULATOR_IDLE_AFTER (TAG=N).
	$(MANAGE_AT_EMULATOR) seed_demo --emulator-only --live --idle-file $(CURDIR)/$(DEMO_IDLE)
	$(MANAGE) collectstatic --noinput --verbosity 0
	@echo "LabGPU on http://127.0.0.1:$(PORT)  (demo users: alice, bob, carol… password labgpu-demo)"
	cd $(BACKEND) && PORT=$(PORT) EMULATOR_PORT=$(EMULATOR_PORT) VENV_BIN=$(CURDIR)/$(VENV)/bin \
	  EMULATOR_BOOT_DELAY=$(EMULATOR_BOOT_DELAY) CHAT_SINK_PORT=$(CHAT_SINK_PORT) \
	  LABGPU_CHAT_ALLOW_LOOPBACK=$${LABGPU_CHAT_ALLOW_LOOPBACK:-1} \
	  LABGPU_PROVIDER_TOKEN_EMULATOR=$${LABGPU_PROVIDER_TOKEN_EMULATOR:-emulator-dev-token} \
	  LABGPU_PROVIDER_ALLOWED_BASE_URLS=$${LABGPU_PROVIDER_ALLOWED_BASE_URLS:-http://127.0.0.1:$(EMULATOR_PORT)} \
	  LABGPU_PUBLIC_API_URL=$${LABGPU_PUBLIC_API_URL:-http://127.0.0.1:$(PORT)} \
	  LABGPU_EMULATOR_IDLE_AFTER=$$(cat $(CURDIR)/$(DEMO_IDLE)) \
	  exec $(CURDIR)/$(VENV)/bin/honcho --no-prefix -f Procfile start

.PHONY: emulator
emulator: install ## Run the DigitalOcean emulator alone on 127.0.0.1:$(EMULATOR_PORT)
	@mkdir -p var
	cd $(BACKEND) && exec $(PY) -m emulator --host 127.0.0.1 --port $(EMULATOR_PORT) \
	  --state-file $(CURDIR)/var/emulator.json --agent-cmd $(CURDIR)/$(VENV)/bin/labgpu-agent \
	  --boot-delay $(EMULATOR_BOOT_DELAY)

.PHONY: worker
worker: db ## Run a Celery worker with the beat schedule
	cd $(BACKEND) && exec $(CURDIR)/$(VENV)/bin/celery -A config worker --beat \
	  --schedule $(CURDIR)/var/celerybeat-schedule --loglevel INFO --pool threads --concurrency 4

.PHONY: dev
dev: migrate ## Django on :8000 plus Vite with hot reload on :5173
	$(MANAGE) runserver 127.0.0.1:$(PORT) & cd frontend && npm run dev

.PHONY: lint
lint: db ## ruff (rules and format), import contracts (docs/architecture.md), the agent's mypy, migrations and schema drift
	$(VENV)/bin/ruff check backend agent bench
	$(VENV)/bin/ruff format --check backend agent bench
	cd $(BACKEND) && $(CURDIR)/$(VENV)/bin/lint-imports
	@# The agent reads a hostile node's tool output: strict typing (agent/pyproject.toml) holds it.
	cd agent && $(CURDIR)/$(VENV)/bin/mypy
	$(MANAGE) makemigrations --check --dry-run
	$(MANAGE) spectacular --validate --fail-on-warn --file $(CURDIR)/var/openapi-check.yaml
	diff -u backend/openapi.yaml $(CURDIR)/var/openapi-check.yaml || \
	  { echo "backend/openapi.yaml is stale: run 'make schema'"; exit 1; }

.PHONY: schema
schema: install ## Regenerate backend/openapi.yaml from the code
	$(MANAGE) spectacular --validate --fail-on-warn --file openapi.yaml

.PHONY: test
test: db ## Install what is needed and run every test (on DATABASE_URL's server, else var/pg's)
	@mkdir -p var
	$(MAKE) lint
	@# The quick tests in parallel (pytest-xdist; each worker has its own test database and Redis
	@# database); the live-process ones (`slow`: workers, gunicorn, crash and timing bounds) on
	@# their own, two at a time: they mostly wait on subprocesses (load average ~2 on 2 cores).
	cd $(BACKEND) && $(PY) -m pytest -m "not security and not slow" -n $(TEST_WORKERS) --maxprocesses 4
	cd $(BACKEND) && $(PY) -m pytest -m "slow and not security" -n $(SLOW_TEST_WORKERS)
	$(MAKE) security
ifneq ($(wildcard agent/pyproject.toml),)
	cd agent && $(PY) -m pytest
endif
ifneq ($(HAS_FRONTEND),)
	@if [ "$(FRONTEND_TESTS)" != "0" ]; then $(MAKE) test-frontend; fi
endif

.PHONY: security
security: db ## Security regression suite: live gunicorn, production settings, schemathesis (0 5xx)
	@mkdir -p var && rm -f var/security-report.txt
	cd $(BACKEND) && LABGPU_SECURITY_REPORT=$(CURDIR)/var/security-report.txt \
	  $(PY) -m pytest -m security --durations=5 -n $(SLOW_TEST_WORKERS)
	@cat var/security-report.txt 2>/dev/null || true

.PHONY: test-frontend
test-frontend: ## SPA: generated client up to date, ESLint + vue-tsc, Vitest, build, bundle budget
	cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run check:api \
	  && npm run lint && npm run test:unit && npm run build && npm run size
	@if [[ -n "$(CI)" || -x "$${E2E_CHROMIUM:-/usr/bin/chromium}" ]]; then $(MAKE) test-e2e; \
	  else echo "Browser tests skipped: they drive Debian's Chromium (apt-get install chromium)."; fi

.PHONY: test-e2e
test-e2e: db ## Browser tests in Debian's Chromium against a live backend with demo data
	frontend/scripts/run-e2e.sh

.PHONY: screenshots
screenshots: db ## Refresh docs/screenshots from the browser suite
	cd frontend && npm run build
	E2E_SCREENSHOT_DIR=$(CURDIR)/docs/screenshots frontend/scripts/run-e2e.sh

.PHONY: clean
clean: db-stop ## Stop the embedded PostgreSQL; remove the virtualenv, build output and local data
	rm -rf $(VENV) var frontend/dist
