"""Settings for the Memory Governance Console.

Every deploy knob comes from an environment variable (see the README's configuration table).
The defaults are the embedded demo: SQLite and a local S3 endpoint on 127.0.0.1. With
MGC_ENV=production the console refuses to start without a real secret key and turns on the
HTTPS protections that `manage.py check --deploy` asks for.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from memoryadmin.env import env_bool, env_float, env_int, env_list, env_str, oidc_origin
from projects import logs as _logs

BASE_DIR = Path(__file__).resolve().parent.parent

MGC_ENV = env_str("MGC_ENV", "development")
if MGC_ENV not in {"development", "production"}:
    raise ImproperlyConfigured("MGC_ENV must be 'development' or 'production'")
PRODUCTION = MGC_ENV == "production"

SECRET_KEY = env_str("MGC_SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("MGC_SECRET_KEY is required when MGC_ENV=production")
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production-0123456789abcdef"

DEBUG = env_bool("MGC_DEBUG", False)
ALLOWED_HOSTS = env_list("MGC_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("MGC_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # Single sign-on through OpenID Connect (python-social-auth; projects/sso/ says why).
    "social_django",
    # The events worker's queue: Django's Tasks framework with django-tasks-db's database
    # backend (projects/events/__init__.py says why this one).
    "django_tasks_db",
    "projects",
]

# The order, and why: (1) RequestContextMiddleware answers the probes (/healthz, /readyz,
# /metrics) before anything else runs, and gives every other request its id, its log line and
# its hook's timing (projects/views/probes.py); (2) SecurityMiddleware (and WhiteNoise in
# production); (3) SignInDoorMiddleware refuses a sign-in already known to be refused (on the
# login page and /admin/login/) before sessions, CSRF or a query, so a flood costs next to
# nothing, while its 429 still carries a request id and is counted; then the runner API's
# guards, sessions, language, CSRF, authentication, and (4) EndedAccountMiddleware right after
# authentication: a session of an account ended meanwhile is flushed before any view.
MIDDLEWARE = [
    "projects.middleware.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "projects.middleware.SignInDoorMiddleware",
    "projects.middleware.ApiJsonErrorsMiddleware",
    "projects.middleware.ApiBodyLimitMiddleware",
    # From here a runner API request (/api/) skips CONSOLE_ONLY_MIDDLEWARE (below).
    "projects.middleware.ApiLaneMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the switcher's cookie, else the browser's Accept-Language, else LANGUAGE_CODE.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "projects.middleware.NulCharacterMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A session of an account deactivated or deleted meanwhile (SCIM, an admin) ends here.
    "projects.middleware.EndedAccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A signed-in person the identity provider no longer vouches for is signed out here.
    "projects.sso.session.ProviderSessionMiddleware",
    # Sign-in failures (a forged token, a provider that is down...) as a page that says so.
    "projects.sso.errors.SignInErrorMiddleware",
    "projects.middleware.SessionEndedMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "projects.middleware.ConsoleNotFoundMiddleware",
    "projects.middleware.NoStoreMiddleware",
]

# What the runner API does without (projects.middleware.ApiLaneMiddleware): a hook has no
# session, CSRF token, language, messages, signed-in person or drafts. It keeps the rest:
# the host check and Content-Length (CommonMiddleware), X-Frame-Options, CSP and no-store.
CONSOLE_ONLY_MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "projects.middleware.NulCharacterMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "projects.middleware.EndedAccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "projects.sso.session.ProviderSessionMiddleware",
    "projects.sso.errors.SignInErrorMiddleware",
    "projects.middleware.SessionEndedMiddleware",
    "projects.middleware.ConsoleNotFoundMiddleware",
]

if PRODUCTION:
    # Static files from STATIC_ROOT (after collectstatic) when no proxy serves them.
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "whitenoise.middleware.WhiteNoiseMiddleware",
    )

ROOT_URLCONF = "memoryadmin.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "projects.sso.context.sign_in",
            ],
            # {% translate %} in every template without a {% load i18n %} to forget.
            "builtins": ["django.templatetags.i18n"],
        },
    },
]

WSGI_APPLICATION = "memoryadmin.wsgi.application"

# Database: SQLite by default, anything dj-database-url understands through DATABASE_URL
# (postgres://user:pass@host:5432/name uses psycopg 3).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("MGC_DB_CONN_MAX_AGE", 0),
        # A kept connection is checked before a request uses it: after a database restart or
        # failover (or a cut link) the first request on each worker opens a new one instead
        # of failing with a 500.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE takes SQLite's write lock at BEGIN, so two saves of one file serialize
    # the way PostgreSQL's row lock makes them (select_for_update is a no-op on SQLite).
    DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The console speaks English and Russian; each person picks with the switcher in the header.
# Language names are written in their own language, so anyone can find theirs.
LANGUAGES = [("en", "English"), ("ru", "Русский")]
LANGUAGE_CODE = env_str("MGC_LANGUAGE_CODE", "en")
if LANGUAGE_CODE not in dict(LANGUAGES):
    raise ImproperlyConfigured(f"MGC_LANGUAGE_CODE must be one of {', '.join(dict(LANGUAGES))}")
LOCALE_PATHS = [BASE_DIR / "locale"]
# Dates as the console shows them per language (ISO-like in English, d.m.Y in Russian); what a
# module here leaves out comes from Django's own locale formats.
FORMAT_MODULE_PATH = ["memoryadmin.formats"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = env_str("MGC_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("MGC_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]

# --- Sign-in -----------------------------------------------------------------------------------
# projects.governance.signin (docs/DEPLOY.md, "Sign-in under a flood"). A client is the
# browser's device cookie for the account when it holds one (set at each successful password
# sign-in), else the client address. Failures lock the pair (account, client), never the
# account for everyone. Refusals are answered 429 with Retry-After and the password unchecked.
# Failed sign-ins of one account from one client before that pair is locked:
MGC_LOGIN_FAILURE_LIMIT = env_int("MGC_LOGIN_FAILURE_LIMIT", 10)
# How long a lockout lasts after the last failure; failures older than this are forgotten.
MGC_LOGIN_LOCKOUT_MINUTES = env_int("MGC_LOGIN_LOCKOUT_MINUTES", 15)
# Failed sign-ins from one address (over all accounts, browsers without a device cookie) before
# the address is paused for such sign-ins: a flood or password spraying from one machine. Each
# of those failures cost a password check: a flood from one address costs ten, then nothing.
MGC_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("MGC_LOGIN_ADDRESS_FAILURE_LIMIT", 10)
# Sign-in attempts from one address (browsers without a device cookie) per window (N/s, N/m,
# N/h) past which the address is paused as after that many failures: a flood is paused at once,
# however few of its passwords could be checked yet. Counted in the shared cache.
MGC_LOGIN_ADDRESS_RATE = env_str("MGC_LOGIN_ADDRESS_RATE", "30/m")
# An account with MGC_LOGIN_FAILURE_LIMIT failures from clients without its device cookie (many
# addresses) takes one password check from such clients per a delay: 1 s, doubling with each
# further failure, at most this many seconds. Its owner's devices are not slowed.
MGC_LOGIN_SLOWDOWN_MAX_SECONDS = env_int("MGC_LOGIN_SLOWDOWN_MAX_SECONDS", 60)
# Password checks (PBKDF2, about half a second of one core each) running at once per process in
# each lane (browsers with a device cookie for the account; all others); 0 means one per core
# shared among the host's MGC_WEB_WORKERS (at least one per process).
_cores = os.cpu_count() or 1
MGC_LOGIN_CHECKS = env_int("MGC_LOGIN_CHECKS", 0) or max(
    1, _cores // max(1, env_int("MGC_WEB_WORKERS", 0) or _cores)
)
# The scheduling priority (nice, 0-19) of the threads that check passwords for browsers without a
# device cookie: under load the runner API and pages go first, on an idle machine such a check
# still has a whole core. 0: as is.
MGC_LOGIN_CHECK_NICE = env_int("MGC_LOGIN_CHECK_NICE", 10)
# Sign-ins that may wait for a check, per process, in the lane without a device cookie (twice
# that in the other); past that, or after 10 s of waiting (30 s in the other), "busy". Each
# waits in a gunicorn thread: keep 2 x checks + 3 x queue at most MGC_WEB_THREADS (8).
MGC_LOGIN_QUEUE = env_int("MGC_LOGIN_QUEUE", 2)
# How long a device cookie stays valid (renewed at each sign-in with it).
MGC_LOGIN_DEVICE_DAYS = env_int("MGC_LOGIN_DEVICE_DAYS", 180)
# Behind N reverse proxies that each append to X-Forwarded-For, the client is the N-th address
# from the right; 0 trusts no header (REMOTE_ADDR), the right choice without a proxy.
MGC_TRUSTED_PROXIES = env_int("MGC_TRUSTED_PROXIES", 0)
# The set-password link's form: posts per client address and per link, per 10 minutes.
MGC_SET_PASSWORD_RATE = env_str("MGC_SET_PASSWORD_RATE", "20/10m")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "projects:dashboard"
LOGOUT_REDIRECT_URL = "login"

# --- Single sign-on (OpenID Connect) -------------------------------------------------------
# On when an issuer is set: its discovery document (<issuer>/.well-known/openid-configuration)
# names every endpoint and the signing keys. docs/DEPLOY.md shows Keycloak and Entra ID.
MGC_OIDC_ISSUER = env_str("MGC_OIDC_ISSUER").rstrip("/")
MGC_OIDC_ENABLED = bool(MGC_OIDC_ISSUER)
MGC_OIDC_CLIENT_ID = env_str("MGC_OIDC_CLIENT_ID")
MGC_OIDC_CLIENT_SECRET = env_str("MGC_OIDC_CLIENT_SECRET")
if MGC_OIDC_ENABLED and not (MGC_OIDC_CLIENT_ID and MGC_OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("MGC_OIDC_ISSUER needs MGC_OIDC_CLIENT_ID and MGC_OIDC_CLIENT_SECRET")
# Shown on the login page's button: "Sign in with <name>".
MGC_OIDC_PROVIDER_NAME = env_str("MGC_OIDC_PROVIDER_NAME", "SSO")
MGC_OIDC_SCOPES = env_str("MGC_OIDC_SCOPES", "openid profile email").replace(",", " ").split()
# Which claim names the account at its first sign-in, and which one lists the groups.
MGC_OIDC_USERNAME_CLAIM = env_str("MGC_OIDC_USERNAME_CLAIM", "preferred_username")
MGC_OIDC_GROUPS_CLAIM = env_str("MGC_OIDC_GROUPS_CLAIM", "groups")
# How often a signed-in person's session is confirmed with the provider (a refresh-token
# grant); 0 confirms on every request. docs/DEPLOY.md: offboarding.
MGC_OIDC_RECHECK_SECONDS = env_int("MGC_OIDC_RECHECK_SECONDS", 60)
MGC_OIDC_TIMEOUT = env_float("MGC_OIDC_TIMEOUT", 5.0)
# --- The company's memory over MCP (projects/mcp/) ----------------------------------------
# The endpoint's resource identifier (RFC 8707), named in its protected resource metadata and
# expected as the access tokens' audience; empty: the console's own address + /mcp/.
MGC_MCP_RESOURCE = env_str("MGC_MCP_RESOURCE")
# Other audiences accepted (Entra ID's api://<app id>, a Keycloak client id), comma-separated.
MGC_MCP_AUDIENCES = env_list("MGC_MCP_AUDIENCES", [])
# The scopes MCP clients are told to ask for (Entra ID: api://<app id>/mcp.access).
MGC_MCP_SCOPES = env_str("MGC_MCP_SCOPES", "openid").replace(",", " ").split()
# An MCP session the client never ended is ended after this long without a request.
MGC_MCP_SESSION_IDLE_SECONDS = env_int("MGC_MCP_SESSION_IDLE_SECONDS", 3600)
# Passwords kept in the console: "on" (anyone with one), "breakglass" (only the accounts in
# MGC_BREAKGLASS_USERS, for when the provider is down), "off".
MGC_LOCAL_LOGIN = env_str("MGC_LOCAL_LOGIN", "on")
if MGC_LOCAL_LOGIN not in {"on", "breakglass", "off"}:
    raise ImproperlyConfigured("MGC_LOCAL_LOGIN must be on, breakglass or off")
MGC_BREAKGLASS_USERS = env_list("MGC_BREAKGLASS_USERS", [])
if MGC_LOCAL_LOGIN != "on" and not MGC_OIDC_ENABLED:
    raise ImproperlyConfigured("MGC_LOCAL_LOGIN=%s needs single sign-on (MGC_OIDC_ISSUER)" % MGC_LOCAL_LOGIN)

# The guard first (a refused password sign-in stops there, before any password is hashed),
# then the password backend (its check takes a turn in the pool), then single sign-on.
# Sessions made without a backend named (tests' force_login) use the first backend that can
# load a user: the password backend.
AUTHENTICATION_BACKENDS = [
    "projects.governance.signin.SignInGuardBackend",
    "projects.sso.backend.LocalPasswordBackend",
    "projects.sso.backend.ConsoleOpenIdConnect",
]
SOCIAL_AUTH_URL_NAMESPACE = "social"
SOCIAL_AUTH_OIDC_OIDC_ENDPOINT = MGC_OIDC_ISSUER
SOCIAL_AUTH_OIDC_KEY = MGC_OIDC_CLIENT_ID
SOCIAL_AUTH_OIDC_SECRET = MGC_OIDC_CLIENT_SECRET
SOCIAL_AUTH_OIDC_USE_PKCE = True
SOCIAL_AUTH_OIDC_SCOPE = MGC_OIDC_SCOPES
SOCIAL_AUTH_OIDC_IGNORE_DEFAULT_SCOPE = True
SOCIAL_AUTH_OIDC_USERNAME_KEY = MGC_OIDC_USERNAME_CLAIM
SOCIAL_AUTH_OIDC_GROUPS_KEY = MGC_OIDC_GROUPS_CLAIM
# No groups claim at all reads as no groups (Entra ID and Keycloak leave it out when empty).
SOCIAL_AUTH_OIDC_GROUPS_MISSING_AS_EMPTY = True
SOCIAL_AUTH_REQUESTS_TIMEOUT = MGC_OIDC_TIMEOUT
# Failures become the console's error page (projects/sso/errors.py), in debug mode too.
SOCIAL_AUTH_RAISE_EXCEPTIONS = False
SOCIAL_AUTH_PIPELINE = (
    "social_core.pipeline.social_auth.social_details",
    "social_core.pipeline.social_auth.social_uid",
    "social_core.pipeline.social_auth.auth_allowed",
    "social_core.pipeline.social_auth.social_user",
    "projects.sso.pipeline.account",
    "social_core.pipeline.social_auth.load_extra_data",
    "projects.sso.pipeline.memberships",
    "projects.sso.pipeline.keep_tokens",
)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Memory storage (S3) -------------------------------------------------------------------
MGC_S3_BUCKET = env_str("MGC_S3_BUCKET", "agent-memory")
MGC_S3_ENDPOINT_URL = env_str("MGC_S3_ENDPOINT_URL", "http://127.0.0.1:9000")
MGC_S3_OPTIONS = {
    "endpoint_url": MGC_S3_ENDPOINT_URL or None,
    "bucket_name": MGC_S3_BUCKET,
    "access_key": env_str("MGC_S3_ACCESS_KEY_ID", "demo-access-key"),
    "secret_key": env_str("MGC_S3_SECRET_ACCESS_KEY", "demo-secret-key"),
    "region_name": env_str("MGC_S3_REGION", "us-east-1"),
    "addressing_style": env_str("MGC_S3_ADDRESSING_STYLE", "path"),
    "signature_version": "s3v4",
    "default_acl": None,
    "querystring_auth": False,
    "file_overwrite": True,
}
# The IAM API that issues each agent runner S3 credentials of its own, confined by policy to
# its project's prefix. Empty: the S3 endpoint (SeaweedFS and MinIO serve IAM there), or AWS
# IAM itself when the S3 endpoint is empty too.
MGC_S3_IAM_ENDPOINT_URL = env_str("MGC_S3_IAM_ENDPOINT_URL")
# Knowing what changed in the bucket without listing it (projects/memory/feed.py): "seaweedfs"
# follows the filer's metadata stream at MGC_S3_FILER_ADDRESS (host:port.grpcPort) with
# `weed filer.meta.tail` (MGC_S3_FILER_BINARY, else the venv's or PATH's weed); empty lists
# the prefixes runners may write on every pre hook instead.
MGC_S3_CHANGE_FEED = env_str("MGC_S3_CHANGE_FEED")
if MGC_S3_CHANGE_FEED not in {"", "seaweedfs"}:
    raise ImproperlyConfigured("MGC_S3_CHANGE_FEED must be empty or seaweedfs")
MGC_S3_FILER_ADDRESS = env_str("MGC_S3_FILER_ADDRESS")
MGC_S3_FILER_BINARY = env_str("MGC_S3_FILER_BINARY")
# Timeouts and retries for every S3 call; surfaced to people as a clear "storage unavailable".
MGC_S3_CONNECT_TIMEOUT = env_float("MGC_S3_CONNECT_TIMEOUT", 3.0)
MGC_S3_READ_TIMEOUT = env_float("MGC_S3_READ_TIMEOUT", 10.0)
MGC_S3_MAX_ATTEMPTS = env_int("MGC_S3_MAX_ATTEMPTS", 3)

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
    "memory": {"BACKEND": "projects.memory.storage.MemoryStorage", "OPTIONS": MGC_S3_OPTIONS},
}

# Largest memory file accepted, in bytes of UTF-8.
MGC_MAX_FILE_BYTES = env_int("MGC_MAX_FILE_BYTES", 256 * 1024)

# How long the audit trail is kept, in days (0: for ever). `manage.py retention` prunes older
# events after a signed checkpoint, so verify_audit still verifies the chain that is kept.
MGC_AUDIT_RETENTION_DAYS = env_int("MGC_AUDIT_RETENTION_DAYS", 0)

# Memory health (projects.memory.health): episodic notes older than this many days, and files
# no session received for as long, are stale (a project may set its own); lines whose word sets
# are at least this similar (token-set Jaccard) are near duplicates; which workspace files hold
# episodic notes; how many recent sessions per agent and person the stability figure reads.
MGC_HEALTH_STALE_DAYS = env_int("MGC_HEALTH_STALE_DAYS", 30)
MGC_HEALTH_NEAR_DUPLICATE = env_float("MGC_HEALTH_NEAR_DUPLICATE", 0.8)
MGC_HEALTH_EPISODIC = env_str("MGC_HEALTH_EPISODIC", "workspace/notes/**.md")
MGC_HEALTH_STABILITY_SESSIONS = env_int("MGC_HEALTH_STABILITY_SESSIONS", 50)
# The optional model that consolidation asks for summaries (any OpenAI-compatible chat
# completions endpoint); empty: the deterministic jobs only.
MGC_LLM_BASE_URL = env_str("MGC_LLM_BASE_URL", "")
MGC_LLM_API_KEY = env_str("MGC_LLM_API_KEY", "")
MGC_LLM_MODEL = env_str("MGC_LLM_MODEL", "")
MGC_LLM_TIMEOUT = env_float("MGC_LLM_TIMEOUT", 30.0)

# Largest runner API request body (a post hook carrying several files), in bytes.
MGC_API_MAX_BODY_BYTES = env_int("MGC_API_MAX_BODY_BYTES", 2 * 1024 * 1024)
# How long a runner request's Idempotency-Key and its answer are kept for retries.
MGC_IDEMPOTENCY_TTL_HOURS = env_int("MGC_IDEMPOTENCY_TTL_HOURS", 24)
# A request whose worker died is retryable at once on the same host (its pid is gone); from
# another host, once its lease (renewed every third of it while the request runs) runs out.
MGC_IDEMPOTENCY_LEASE_SECONDS = env_float("MGC_IDEMPOTENCY_LEASE_SECONDS", 10.0)
# Django refuses request bodies above this; kept above the API limit so the API's own JSON
# 413 answers first.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2_621_440, MGC_API_MAX_BODY_BYTES + 1024)

# Where the tokenizer's rank file is placed for tiktoken (empty: the system's temp folder).
MGC_TOKENIZER_CACHE_DIR = env_str("MGC_TOKENIZER_CACHE_DIR")

# --- E-mail (set-password links for accounts admins create) --------------------------------
# With an SMTP host the console sends the link; without one the demo prints mails on its
# console and production sends none (the admin passes the link on, the page says so).
MGC_EMAIL_HOST = env_str("MGC_EMAIL_HOST")
MGC_SENDS_EMAIL = bool(MGC_EMAIL_HOST) or not PRODUCTION
if MGC_EMAIL_HOST:
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": MGC_EMAIL_HOST,
                "port": env_int("MGC_EMAIL_PORT", 587),
                "username": env_str("MGC_EMAIL_USER"),
                "password": env_str("MGC_EMAIL_PASSWORD"),
                "use_tls": env_bool("MGC_EMAIL_USE_TLS", True),
                "timeout": 10,
            },
        }
    }
elif not PRODUCTION:
    MAILERS = {"default": {"BACKEND": "projects.demo.mail.ReadableConsoleBackend"}}
DEFAULT_FROM_EMAIL = env_str("MGC_EMAIL_FROM", "memory-console@localhost")
# How long a set-password link works, in seconds.
PASSWORD_RESET_TIMEOUT = env_int("MGC_INVITE_LINK_SECONDS", 3 * 24 * 3600)

# --- Cache ------------------------------------------------------------------------------------
_redis_url = env_str("MGC_REDIS_URL")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _redis_url}
        if _redis_url
        # Django's default of 300 entries is less than one text and one token count per file
        # of a large workspace: past it every pre hook would fetch most texts from S3 again
        # (bench/run.py, growth with files).
        # and texts up to 256 KiB each: bounded in bytes too (projects/cache.py).
        else {
            "BACKEND": "projects.cache.BoundedLocMemCache",
            "OPTIONS": {
                "MAX_ENTRIES": env_int("MGC_LOCAL_CACHE_ENTRIES", 20_000),
                "MAX_BYTES": env_int("MGC_LOCAL_CACHE_BYTES", 128 * 1024 * 1024),
            },
        }
    )
}

# Pre hook answers remembered in each process under the heads of the files they drew from
# (runners/context.py): the warm hook's one read. Bounded in bytes, beside the cache above.
MGC_PROMPT_MEMO_BYTES = env_int("MGC_PROMPT_MEMO_BYTES", 16 * 1024 * 1024)

# --- Events out: webhooks and audit streams (projects/events/) -----------------------------
# The worker (manage.py events_worker) runs Django's Tasks on the database backend of
# django-tasks-db: the queue lives beside the outbox, in the same database.
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default", "events", "holds", "subjects", "scans", "jobs"],
    }
}
# Receivers on loopback, private, link-local or other non-public addresses are refused unless
# named here (comma-separated addresses or networks, e.g. 127.0.0.1,10.2.0.0/16).
MGC_WEBHOOK_ALLOWED_NETWORKS = env_list("MGC_WEBHOOK_ALLOWED_NETWORKS", [])
MGC_WEBHOOK_CONNECT_TIMEOUT = env_float("MGC_WEBHOOK_CONNECT_TIMEOUT", 3.0)
MGC_WEBHOOK_READ_TIMEOUT = env_float("MGC_WEBHOOK_READ_TIMEOUT", 10.0)
# Retries: exponential backoff with jitter from the base up to the cap, for the window; then
# the event is given up and a subscription with no success since is disabled.
MGC_EVENTS_RETRY_BASE_SECONDS = env_float("MGC_EVENTS_RETRY_BASE_SECONDS", 30.0)
MGC_EVENTS_RETRY_MAX_SECONDS = env_float("MGC_EVENTS_RETRY_MAX_SECONDS", 4 * 3600.0)
MGC_EVENTS_RETRY_WINDOW_HOURS = env_float("MGC_EVENTS_RETRY_WINDOW_HOURS", 24.0)
# How long a worker owns an event it is delivering (longer than a request can take); a worker
# killed mid-delivery leaves it to another after this.
MGC_EVENTS_LEASE_SECONDS = env_float("MGC_EVENTS_LEASE_SECONDS", 60.0)
# How often the worker's relay looks for events to enqueue (new, or whose task was lost).
MGC_EVENTS_POLL_SECONDS = env_float("MGC_EVENTS_POLL_SECONDS", 1.0)
# How often the events worker sweeps each standing legal hold for versions written past the
# console (and takes up a placement or release that stopped short): the longest a direct write
# under a hold stays unheld without the change feed (docs/DEPLOY.md, "Legal holds").
MGC_HOLD_SWEEP_SECONDS = env_float("MGC_HOLD_SWEEP_SECONDS", 60.0)
# How long the list of subscriptions stays cached (one query, then none per change); a change
# clears the shared cache at once, so without Redis other processes see it after this.
MGC_EVENTS_SUBSCRIPTIONS_SECONDS = env_float("MGC_EVENTS_SUBSCRIPTIONS_SECONDS", 5.0)
# A rotated secret keeps signing (beside the new one) for this long.
MGC_WEBHOOK_ROTATION_HOURS = env_float("MGC_WEBHOOK_ROTATION_HOURS", 24.0)

# --- Memory poisoning: a second opinion (projects/memory/classifier.py) --------------------
# A guard model the company runs behind Hugging Face's text-classification API (POST
# {"inputs": [...]} -> [{label, score}, ...] per input). Empty: the rules alone decide. Asked
# within the timeout; when it is down or late the rules decide and the result says so.
MGC_POISON_CLASSIFIER_URL = env_str("MGC_POISON_CLASSIFIER_URL")
# The organisation's own domains: an address or link under them is not "outside" to the
# poisoning scanner (memory/quarantine.py).
MGC_POISON_TRUSTED_DOMAINS = env_list("MGC_POISON_TRUSTED_DOMAINS", [])
MGC_POISON_CLASSIFIER_TOKEN = env_str("MGC_POISON_CLASSIFIER_TOKEN")
MGC_POISON_CLASSIFIER_THRESHOLD = env_float("MGC_POISON_CLASSIFIER_THRESHOLD", 0.8)
MGC_POISON_CLASSIFIER_TIMEOUT = env_float("MGC_POISON_CLASSIFIER_TIMEOUT", 1.5)
# The labels that mean "poisoned" (Prompt Guard: MALICIOUS or LABEL_1; others: INJECTION...).
MGC_POISON_CLASSIFIER_LABELS = env_list(
    "MGC_POISON_CLASSIFIER_LABELS", ["MALICIOUS", "INJECTION", "JAILBREAK", "LABEL_1", "UNSAFE"]
)
if MGC_POISON_CLASSIFIER_URL and not MGC_POISON_CLASSIFIER_URL.startswith(("https://", "http://")):
    raise ImproperlyConfigured("MGC_POISON_CLASSIFIER_URL must be an http(s) URL")
# --- Subjects' requests (projects/governance/subjects.py) -----------------------------------
# The operator named on answers and destruction acts (152-FZ: the operator of personal data).
MGC_OPERATOR_NAME = env_str("MGC_OPERATOR_NAME", "Memory Governance Console (demo operator)")
# Answers and destruction acts are kept in S3 under Object Lock retention: in this bucket
# (empty: the memory bucket, under _records/), COMPLIANCE (no one can delete them before the
# date, the console's own keys included) or GOVERNANCE, for this many days (Roskomnadzor Order
# No. 179: 3 years).
MGC_RECORDS_BUCKET = env_str("MGC_RECORDS_BUCKET")
MGC_RECORDS_LOCK_MODE = env_str("MGC_RECORDS_LOCK_MODE", "COMPLIANCE")
if MGC_RECORDS_LOCK_MODE not in {"COMPLIANCE", "GOVERNANCE"}:
    raise ImproperlyConfigured("MGC_RECORDS_LOCK_MODE must be COMPLIANCE or GOVERNANCE")
MGC_RECORDS_RETENTION_DAYS = env_int("MGC_RECORDS_RETENTION_DAYS", 3 * 365 + 1)
# A request is "due soon" this many days before its deadline: its handler gets one reminder
# (mail and the subject_request.due_soon event), and one more once it is overdue.
MGC_SUBJECT_DUE_SOON_DAYS = env_int("MGC_SUBJECT_DUE_SOON_DAYS", 3)
# How often the events worker looks for reminders to send (manage.py subject_request remind
# does the same once, for a schedule without the worker).
MGC_SUBJECT_REMIND_SECONDS = env_float("MGC_SUBJECT_REMIND_SECONDS", 300.0)

# --- Security ---------------------------------------------------------------------------------
# A strict policy: no inline scripts or styles anywhere, so templates keep JS in static/.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
if MGC_OIDC_ENABLED:
    # "Sign in with ..." and "Log out" are forms whose answer redirects to the provider;
    # browsers hold redirects after a form to form-action too.
    SECURE_CSP["form-action"].append(oidc_origin(MGC_OIDC_ISSUER))
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the editor's JS reads the token from the form field, not the cookie

if PRODUCTION:
    SECURE_SSL_REDIRECT = env_bool("MGC_SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("MGC_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("MGC_HSTS_PRELOAD", True)

# --- Logs, probes and metrics (docs/DEPLOY.md, "Probes, metrics and logs") ---------------------
# One JSON object a line (json, the production default) or text for a terminal (the demo's);
# every line carries the request's id, person, project, agent and session where known
# (projects/logs.py). One line per request from `mgc.request` unless MGC_LOG_REQUESTS is off.
MGC_LOG_FORMAT = env_str("MGC_LOG_FORMAT", "json" if PRODUCTION else "text")
if MGC_LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured("MGC_LOG_FORMAT must be json or text")
MGC_LOG_REQUESTS = env_bool("MGC_LOG_REQUESTS", True)
_QUIET = {"level": "WARNING"}  # their DEBUG lines would hold request bodies: memory texts
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "projects.logs.ContextFilter"}},
    "formatters": {
        "json": {"()": "projects.logs.JsonFormatter"},
        "text": {"()": "projects.logs.TextFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": MGC_LOG_FORMAT, "filters": ["context"]}
    },
    "root": {"handlers": ["console"], "level": env_str("MGC_LOG_LEVEL", "INFO")},
    # Django's own console handler (in debug mode) would print each line a second time.
    "loggers": {
        "django": {"handlers": [], "propagate": True},
        # SQL with its parameters (memory texts, prompts) is never logged, whatever the level.
        "django.db.backends": {"level": "INFO"},
        "botocore": _QUIET,
        "boto3": _QUIET,
        "s3transfer": _QUIET,
        "urllib3": _QUIET,
    },
}

# Readiness (/readyz): how long one answer is reused, and how long an event due for delivery
# may wait for the events worker before the console reports itself not ready (0: not checked).
MGC_READY_CACHE_SECONDS = env_float("MGC_READY_CACHE_SECONDS", 2.0)
MGC_READY_OUTBOX_MAX_AGE = env_float("MGC_READY_OUTBOX_MAX_AGE", 600.0)
# /metrics (Prometheus) is off unless one of these is set: a bearer token the scraper sends,
# and/or the addresses or networks allowed to scrape without one (e.g. 10.0.0.0/8).
MGC_METRICS_TOKEN = env_str("MGC_METRICS_TOKEN")
MGC_METRICS_NETWORKS = env_list("MGC_METRICS_NETWORKS", [])
if _multiproc := os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # gunicorn.conf.py sets it for the web workers; the events worker and commands that share
    # it add their counts to the same /metrics.
    Path(_multiproc).mkdir(parents=True, exist_ok=True)

# Never in a log line, wherever they would appear (projects/logs.py scrubs them by value).
_logs.known_secrets(
    [
        SECRET_KEY,
        MGC_S3_OPTIONS["secret_key"],
        MGC_OIDC_CLIENT_SECRET,
        MGC_METRICS_TOKEN,
        env_str("MGC_EMAIL_PASSWORD"),
        DATABASES["default"].get("PASSWORD") or "",
        _redis_url.rpartition("@")[0].rpartition(":")[2] if "@" in _redis_url else "",
    ]
)
