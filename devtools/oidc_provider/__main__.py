"""python -m devtools.oidc_provider serve --dir D --port P --client-id C --client-secret S \
    --redirect-uri URI [--post-logout-uri URI] [--user name:password:group1,group2 ...]

The client secret comes from MGC_IDP_CLIENT_SECRET, users also from MGC_IDP_USERS.

    python -m devtools.oidc_provider disable --dir D alice   # offboarding, seen from the console
    python -m devtools.oidc_provider enable --dir D alice

Sets the folder up (secret key, RS256 signing key, database, the console as a client, the
users named), then serves with gunicorn on 127.0.0.1:P until stopped."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path


def _prepare_folder(data: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o700)
    if not (data / "secret_key").exists():
        (data / "secret_key").write_text(secrets.token_urlsafe(50))
    if not (data / "rsa_key.pem").exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (data / "rsa_key.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    (data / "switches.json").write_text("{}")  # a restart forgets any test switch


def _setup(args) -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from oauth2_provider.models import Application

    from devtools.oidc_provider.views import user_put

    app = Application.objects.filter(client_id=args.client_id).first() or Application(
        client_id=args.client_id
    )
    app.name = "Memory Governance Console"
    app.client_type = Application.CLIENT_CONFIDENTIAL
    app.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    app.algorithm = Application.RS256_ALGORITHM
    app.client_secret = args.client_secret  # hashed on save
    app.redirect_uris = " ".join(args.redirect_uri)
    app.post_logout_redirect_uris = " ".join(args.post_logout_uri)
    app.skip_authorization = True  # a corporate app is pre-approved: no consent page
    app.save()
    _mcp_client(Application)
    # Users from --user and from MGC_IDP_USERS (";"-separated, so passwords stay off argv).
    specs = args.user + [s for s in os.environ.get("MGC_IDP_USERS", "").split(";") if s.strip()]
    for spec in specs:
        name, rest = spec.strip().split(":", 1)
        password, groups = rest.rsplit(":", 1) if ":" in rest else (rest, "")
        user_put(name, password=password, groups=[g for g in groups.split(",") if g])


MCP_CLIENT_ID = "mcp-client"
# Where MCP hosts take the provider's answer: a loopback port of their own (any port, RFC
# 8252), at the paths the mcp SDK's client, Claude Code and VS Code use.
MCP_REDIRECTS = [
    f"http://{host}{path}" for host in ("127.0.0.1", "localhost", "[::1]") for path in ("/callback", "/")
]


def _mcp_client(Application) -> None:
    """The company's MCP clients, registered ahead (as with Entra ID, which has no dynamic
    registration): a public client (no secret; PKCE proves the sign-in) that asks for tokens
    for the console's MCP endpoint."""
    app = Application.objects.filter(client_id=MCP_CLIENT_ID).first() or Application(client_id=MCP_CLIENT_ID)
    app.name = "MCP hosts (Claude, Cursor, VS Code)"
    app.client_type = Application.CLIENT_PUBLIC
    app.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    app.algorithm = Application.RS256_ALGORITHM
    app.redirect_uris = " ".join(MCP_REDIRECTS)
    app.skip_authorization = True
    app.save()


def _set_active(data: Path, username: str, active: bool) -> int:
    """Straight in the provider's database (works while it runs: SQLite, one row)."""
    import django

    os.environ["MGC_IDP_DIR"] = str(data)
    os.environ["DJANGO_SETTINGS_MODULE"] = "devtools.oidc_provider.settings"
    django.setup()
    from django.contrib.auth.models import User

    changed = User.objects.filter(username=username).update(is_active=active)
    print(f"{username}: {'enabled' if active else 'disabled'}" if changed else f"no user {username}")
    return 0 if changed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.oidc_provider")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--dir", required=True, type=Path)
    serve.add_argument("--port", required=True, type=int)
    serve.add_argument("--client-id", required=True)
    serve.add_argument("--client-secret", default=os.environ.get("MGC_IDP_CLIENT_SECRET", ""))
    serve.add_argument("--redirect-uri", action="append", default=[])
    serve.add_argument("--post-logout-uri", action="append", default=[])
    serve.add_argument(
        "--user",
        action="append",
        default=[],
        help="name:password:group1,group2 (or in MGC_IDP_USERS, ;-separated)",
    )
    for name, helptext in (
        ("disable", "disable a user (the console signs them out)"),
        ("enable", "enable a user again"),
    ):
        command = sub.add_parser(name, help=helptext)
        command.add_argument("--dir", required=True, type=Path)
        command.add_argument("username")
    args = parser.parse_args(argv)
    if args.command in ("disable", "enable"):
        return _set_active(args.dir.resolve(), args.username, args.command == "enable")
    if not args.client_secret:
        parser.error("--client-secret or MGC_IDP_CLIENT_SECRET is required")

    data = args.dir.resolve()
    _prepare_folder(data)
    os.environ["MGC_IDP_DIR"] = str(data)
    os.environ.setdefault("MGC_IDP_ISSUER", f"http://127.0.0.1:{args.port}/o")
    os.environ["DJANGO_SETTINGS_MODULE"] = "devtools.oidc_provider.settings"
    _setup(args)

    from gunicorn.app.wsgiapp import run

    sys.argv = [
        "gunicorn",
        "devtools.oidc_provider.wsgi",
        "--bind",
        f"127.0.0.1:{args.port}",
        "--workers",
        "1",
        "--threads",
        "4",
        "--worker-class",
        "gthread",
        "--graceful-timeout",
        "1",
        "--log-level",
        "warning",
    ]
    print(f"identity provider ready on http://127.0.0.1:{args.port}/o", flush=True)
    return run()


if __name__ == "__main__":
    sys.exit(main())
