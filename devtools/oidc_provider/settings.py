"""Settings of the test identity provider (never the console's): everything it keeps lives in
MGC_IDP_DIR. Its cookies have names of their own, since browsers do not keep cookies apart by
port and the console runs on the same 127.0.0.1."""

import os
from pathlib import Path

DATA = Path(os.environ.get("MGC_IDP_DIR", "/tmp/mgc-idp"))  # noqa: S108 - a default for a dev tool
ISSUER = os.environ.get("MGC_IDP_ISSUER", "")
CONTROL_TOKEN = os.environ.get("MGC_IDP_CONTROL_TOKEN", "")


def _read(name: str) -> str:
    path = DATA / name
    return path.read_text() if path.exists() else ""


SECRET_KEY = _read("secret_key") or "idp-bootstrap-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
    "devtools.oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "devtools.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DATA / "idp.sqlite3"),
        "OPTIONS": {"timeout": 20},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
SESSION_COOKIE_NAME = "idp_sessionid"
CSRF_COOKIE_NAME = "idp_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": ISSUER,
    "OIDC_RSA_PRIVATE_KEY": _read("rsa_key.pem"),
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Your name",
        "email": "Your e-mail",
        "groups": "Your groups",
    },
    "DEFAULT_SCOPES": ["openid"],
    "OAUTH2_VALIDATOR_CLASS": "devtools.oidc_provider.validator.TestProviderValidator",
    # Short, like a corporate provider's: the console re-checks sessions with refresh tokens.
    "ACCESS_TOKEN_EXPIRE_SECONDS": 300,
    # Access tokens are JWTs naming the resource they were asked for (RFC 8707) as their
    # audience, as a resource server (the console's MCP endpoint) checks them.
    "ACCESS_TOKEN_GENERATOR": "devtools.oidc_provider.validator.access_token",
    # MCP hosts (Claude Code, VS Code, the mcp SDK's client) take the answer on a loopback
    # port of their own (RFC 8252): any port of 127.0.0.1, [::1] and localhost.
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "ID_TOKEN_EXPIRE_SECONDS": 300,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ALLOWED_SCHEMES": ["http", "https"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
# A demo and test provider: PBKDF2 with few rounds, so a sign-in costs milliseconds, not 0.5 s.
PASSWORD_HASHERS = ["devtools.oidc_provider.validator.QuickPBKDF2"]
