"""Who is calling the MCP endpoint: the console as an OAuth 2.1 resource server (the MCP
specification's authorization part, RFC 9728, RFC 8707).

A person's access token is a JWT from the identity provider single sign-on already trusts
(MGC_OIDC_ISSUER). It is checked here, every request:

- its signature against the provider's JWKS: social-auth's own key lookup (the JWKS named by
  the discovery document, cached, fetched again when a token names a key id it does not list,
  at most once per `JWKS_REFRESH_SECONDS` so a flood of made-up key ids cannot make the
  console hammer the provider);
- its issuer (the discovery document's), its audience (this endpoint's resource identifier,
  `resource()`, or one of MGC_MCP_AUDIENCES), its expiry, and a subject.

The subject is the person's account exactly as single sign-on finds it (`sso.identity`:
linked by `sub`, the same issuer check, accounts made the same way); memberships follow the
token's groups claim when it carries one (`governance.groups`). Offboarding keeps the same
interval as browser sessions: once MGC_OIDC_RECHECK_SECONDS have passed since the provider
last vouched for a token, the next request asks it again by token introspection (RFC 7662,
the console's own client credentials); a token the provider no longer calls active is refused,
the person's open MCP sessions end and the trail says so. A provider that does not answer
cannot vouch: 503, nothing refused for good.

Runner tokens (`mgc_...`) still work as bearer tokens, for agent hosts without a person.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from social_core.exceptions import AuthConfigurationError, AuthProviderError, SocialAuthBaseException

from projects.audit import Actor, audit_record
from projects.governance import groups as group_service
from projects.models import AgentToken
from projects.runners import bearer
from projects.sso import identity
from projects.sso.session import provider_backend

log = logging.getLogger(__name__)

JWKS_REFRESH_SECONDS = 30  # at most one JWKS fetch this often for key ids the cache lacks
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]
LEEWAY_SECONDS = 30  # clocks of the provider and the console may differ a little
WELL_KNOWN = "/.well-known/oauth-protected-resource"


class Unauthorized(Exception):
    """No valid token: a 401 with a WWW-Authenticate challenge (RFC 6750 `error` when a
    token was sent and refused)."""

    def __init__(self, description: str, error: str = "invalid_token"):
        super().__init__(description)
        self.description, self.error = description, error


class ProviderDown(Exception):
    """The identity provider did not answer while a token needed confirming: a 503."""


@dataclass(frozen=True)
class Caller:
    """A person (signed in at the provider) or a runner token (an agent host without one)."""

    user: object | None = None
    token: AgentToken | None = None

    @property
    def label(self) -> str:
        return self.user.get_username() if self.user is not None else f"token {self.token.prefix}"


def resource(request, path: str = "/mcp/") -> str:
    """The resource identifier (RFC 8707) of the endpoint at `path` (/mcp/ or
    /mcp/<project>/<agent>/): MGC_MCP_RESOURCE (else the console's own address with /mcp/),
    with the endpoint's path below /mcp/ after it."""
    base = settings.MGC_MCP_RESOURCE or request.build_absolute_uri("/mcp/")
    below = path.strip("/").removeprefix("mcp").strip("/")
    return f"{base.rstrip('/')}/{below}/" if below else f"{base.rstrip('/')}/"


def audiences(request) -> list[str]:
    """What an access token's audience may be: the company's MCP resource, the very endpoint
    asked (a client that followed its path-suffixed metadata asks for that), or one of
    MGC_MCP_AUDIENCES (Entra ID's and Keycloak's audiences are configured names). With and
    without a trailing slash."""
    named = [resource(request), resource(request, request.path), *settings.MGC_MCP_AUDIENCES]
    return sorted({a for name in named for a in (name, name.rstrip("/"), name.rstrip("/") + "/")})


def metadata_url(request, path: str) -> str:
    """Where the protected resource metadata of the endpoint at `path` is: RFC 9728's
    well-known URI with the resource's path after it."""
    return request.build_absolute_uri(WELL_KNOWN + path.rstrip("/"))


def authenticate(request) -> Caller:
    header = request.headers.get("Authorization", "")
    scheme, _sep, raw = header.partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw:
        raise Unauthorized("A bearer token is required.", error="")
    if raw.startswith(bearer.TOKEN_PREFIX):
        token = bearer.token_authenticate(raw)
        if token is None:
            raise Unauthorized("This runner token is unknown, revoked or expired.")
        return Caller(token=token)
    if not settings.MGC_OIDC_ENABLED:
        raise Unauthorized("Single sign-on is off: only runner tokens are taken here.")
    return Caller(user=_person(request, raw))


# --- Access tokens -------------------------------------------------------------------------------


def _claims(backend, request, raw: str) -> dict:
    try:
        header = jwt.get_unverified_header(raw)
    except jwt.PyJWTError:
        raise Unauthorized("The access token is not a JWT this console can read.") from None
    if header.get("alg") not in ALGORITHMS:
        raise Unauthorized("The access token's signing algorithm is not accepted.")
    try:
        key = _signing_key(backend, raw, header.get("kid"))
    except (AuthProviderError, AuthConfigurationError) as exc:
        raise ProviderDown(str(exc)) from None
    if key is None:
        raise Unauthorized("The access token's signature matches none of the identity provider's keys.")
    try:
        return jwt.decode(
            raw,
            jwt.PyJWK(key).key,
            algorithms=[header["alg"]],
            audience=audiences(request),
            issuer=backend.id_token_issuer(),
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("The access token has expired.") from None
    except jwt.InvalidAudienceError:
        raise Unauthorized("The access token was issued for another resource (its audience).") from None
    except jwt.InvalidIssuerError:
        raise Unauthorized("The access token was issued by another issuer.") from None
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"The access token is not valid ({exc.__class__.__name__}).") from None


def _signing_key(backend, raw: str, kid: str | None) -> dict | None:
    """social-auth's key lookup (the JWKS cached, fetched again for an unknown key id), with
    that fetch at most once per JWKS_REFRESH_SECONDS."""
    if kid is not None and not any(k.get("kid") == kid for k in backend.get_jwks_keys()):
        if not cache.add("mgc:mcp:jwks-refresh", 1, timeout=JWKS_REFRESH_SECONDS):
            return None
    try:
        return backend.find_valid_key(raw)
    except jwt.PyJWTError:
        return None


def _person(request, raw: str):
    backend = provider_backend(request)
    try:
        claims = _claims(backend, request, raw)
    except SocialAuthBaseException as exc:  # discovery or JWKS unreadable
        raise ProviderDown(str(exc)) from None
    digest = hashlib.sha256(raw.encode()).hexdigest()
    key = f"mgc:mcp:token:{digest}"
    known = cache.get(key)
    if known == "refused":
        raise Unauthorized("The identity provider no longer vouches for this token.")
    now = time.time()
    fresh = known is not None and now < known["checked_at"] + settings.MGC_OIDC_RECHECK_SECONDS
    user = get_user_model().objects.filter(pk=known["user"]).first() if fresh else None
    if user is None:  # first seen, or the provider's word is older than the re-check interval
        user = _confirmed(backend, raw, claims)
        cache.set(key, {"user": user.pk, "checked_at": now}, timeout=max(1, int(claims["exp"] - now) + 60))
    if not user.is_active:  # deactivated in the console: refused at once, as a browser session is
        raise Unauthorized("This account is deactivated in the console.")
    return user


def _confirmed(backend, raw: str, claims: dict):
    """The account for the token's subject, after the provider confirmed the token still
    stands (introspection); memberships follow the token's groups."""
    if not _active_at_provider(backend, raw):
        _offboard(claims, raw)
        raise Unauthorized("The identity provider no longer vouches for this token.")
    try:
        user, _link, _new = identity.account_for_identity(
            issuer=claims["iss"],
            subject=str(claims["sub"]),
            username_value=claims.get(settings.MGC_OIDC_USERNAME_CLAIM),
            claim=settings.MGC_OIDC_USERNAME_CLAIM,
            email=claims.get("email") or "",
            first_name=claims.get("given_name") or "",
            last_name=claims.get("family_name") or "",
        )
    except identity.IdentityRefused as refused:
        raise Unauthorized(_refusal_text(refused)) from None
    groups = claims.get(settings.MGC_OIDC_GROUPS_CLAIM)
    if isinstance(groups, list) and all(isinstance(g, str) for g in groups):
        # Only a token that carries the claim says what the groups are (an access token
        # without it, as Entra ID's often are, says nothing, and takes no membership away).
        group_service.memberships_follow_groups(user=user, groups=groups)
    return user


def _active_at_provider(backend, raw: str) -> bool:
    config = backend.oidc_config()
    endpoint = config.get("introspection_endpoint")
    if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
        # No introspection (Entra ID): the token's own lifetime bounds it (docs/DEPLOY.md).
        return True
    try:
        answer = backend.request(
            endpoint,
            method="POST",
            data={"token": raw, "token_type_hint": "access_token"},
            auth=(settings.MGC_OIDC_CLIENT_ID, settings.MGC_OIDC_CLIENT_SECRET),
            stage="token_validation",
        )
        return answer.json().get("active") is True
    except (AuthProviderError, AuthConfigurationError, ValueError) as exc:
        log.warning("cannot confirm an MCP access token with the identity provider: %s", exc)
        raise ProviderDown(str(exc)) from None


def _offboard(claims: dict, raw: str) -> None:
    """The provider no longer vouches: said once in the trail, and the person's open MCP
    sessions end (their agents' console sessions with them)."""
    from projects.mcp import sessions  # sessions imports this module

    digest = hashlib.sha256(raw.encode()).hexdigest()
    cache.set(f"mgc:mcp:token:{digest}", "refused", timeout=max(60, int(claims["exp"] - time.time()) + 60))
    link = identity.linked(str(claims["sub"]))
    if link is None:
        return
    user = link.user
    ended = sessions.end_all_for(user, reason="signed_out")
    audit_record(
        actor=Actor.system("sign-in"),
        action="session.ended",
        obj=user,
        details={
            "user": user.get_username(),
            "reason": "token_inactive",
            "via": "mcp",
            "mcp_sessions": ended,
        },
    )
    log.info("identity provider no longer vouches for %s: MCP access refused", user.get_username())


def _refusal_text(refused: identity.IdentityRefused) -> str:
    details = refused.details
    if refused.code == "authentication_disallowed":
        return "This account is deactivated in the console."
    if refused.code == "identity_in_use":
        return f"This identity's account was linked through another identity provider ({details['issuer']})."
    if refused.code == "username_in_use":
        return (
            f"The username {details['username']} is already used by another account in the console: "
            "an administrator renames one of them."
        )
    return details.get("message") or "The access token names no account."
