"""Settings for the Memory Governance Console.

Every deploy knob comes from an environment variable (see the README's configuration table).
The defaults are the embedded demo: SQLite and a local S3 endpoint on 127.0.0.1. With
MGC_ENV=production the console refuses to start without a real secret key and turns on the
HTTPS protections that `manage.py check --deploy` asks for.
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from memoryadmin.env import env_bool, env_float, env_int, env_list, env_str

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
    "projects",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "projects.middleware.ApiJsonErrorsMiddleware",
    "projects.middleware.ApiBodyLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the switcher's cookie, else the browser's Accept-Language, else LANGUAGE_CODE.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "projects.middleware.NulCharacterMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "projects.middleware.SessionEndedMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "projects.middleware.ConsoleNotFoundMiddleware",
]

if PRODUCTION:
    # Static files from STATIC_ROOT (after collectstatic) when no proxy serves them.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

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

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "projects:dashboard"
LOGOUT_REDIRECT_URL = "login"

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

# Largest runner API request body (a post hook carrying several files), in bytes.
MGC_API_MAX_BODY_BYTES = env_int("MGC_API_MAX_BODY_BYTES", 2 * 1024 * 1024)
# How long a runner request's Idempotency-Key and its answer are kept for retries.
MGC_IDEMPOTENCY_TTL_HOURS = env_int("MGC_IDEMPOTENCY_TTL_HOURS", 24)
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
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": {
        "host": MGC_EMAIL_HOST, "port": env_int("MGC_EMAIL_PORT", 587),
        "username": env_str("MGC_EMAIL_USER"), "password": env_str("MGC_EMAIL_PASSWORD"),
        "use_tls": env_bool("MGC_EMAIL_USE_TLS", True), "timeout": 10}}}
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
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
              "OPTIONS": {"MAX_ENTRIES": env_int("MGC_LOCAL_CACHE_ENTRIES", 20_000)}}
    )
}

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("MGC_LOG_LEVEL", "INFO")},
    # Django's own console handler (in debug mode) would print each line a second time.
    "loggers": {"django": {"handlers": [], "propagate": True}},
}
