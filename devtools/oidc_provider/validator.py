"""What this provider says about a user, and the test switches that make it misbehave.

The switches live in a JSON file in the provider's folder (the /testing/switches control call
writes it), so every worker process reads the same ones."""

from __future__ import annotations

import base64
import json
import secrets
import time

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from jwcrypto import jwk, jwt
from oauth2_provider.oauth2_validators import OAuth2Validator

from devtools.oidc_provider import settings as idp_settings

SWITCHES = "switches.json"


def switches() -> dict:
    path = idp_settings.DATA / SWITCHES
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _other_key() -> jwk.JWK:
    """A second RSA key, kept in the folder: what a forger signs with."""
    path = idp_settings.DATA / "forger_key.pem"
    if not path.exists():
        key = jwk.JWK.generate(kty="RSA", size=2048)
        path.write_bytes(key.export_to_pem(private_key=True, password=None))
    return jwk.JWK.from_pem(path.read_bytes())


class TestProviderValidator(OAuth2Validator):
    # Every claim goes out with the openid scope: a corporate provider configured for the
    # console sends name, e-mail and groups, and the test needs no scope juggling.
    oidc_claim_scope = None

    def get_additional_claims(self, request):
        user = request.user
        return {
            "preferred_username": user.username,
            "email": user.email,
            "name": user.get_full_name() or user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        """Refuse a disabled user's refresh token, as Keycloak and Entra ID do (the toolkit
        alone would still honour it)."""
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        return valid and request.user is not None and request.user.is_active

    def finalize_id_token(self, id_token, token, token_handler, request):
        flags = switches()
        if flags.get("tokens", "id") not in ("id", "all"):
            return super().finalize_id_token(id_token, token, token_handler, request)
        if not any(flags.get(name) for name in ("forge", "expired", "audience", "issuer")):
            return super().finalize_id_token(id_token, token, token_handler, request)
        serialized = super().finalize_id_token(id_token, token, token_handler, request)
        payload = serialized.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        if flags.get("expired"):
            claims["iat"] = int(time.time()) - 3600
            claims["exp"] = int(time.time()) - 1800
        if flags.get("audience"):
            claims["aud"] = flags["audience"]
        if flags.get("issuer"):
            claims["iss"] = flags["issuer"]
        return _signed(claims, forged=flags.get("forge") or False)


def _signed(claims: dict, *, forged: bool | str = False) -> str:
    """RS256 with the provider's key (its id in the header), or with the forger's key under
    the real key's id (a forger copies the header), or under its own (forged="own-kid": a
    key the provider's JWKS does not list)."""
    real = jwk.JWK.from_pem(idp_settings.OAUTH2_PROVIDER["OIDC_RSA_PRIVATE_KEY"].encode())
    key = _other_key() if forged else real
    kid = key.thumbprint() if forged == "own-kid" else real.thumbprint()
    token = jwt.JWT(header=json.dumps({"typ": "JWT", "alg": "RS256", "kid": kid}), claims=json.dumps(claims))
    token.make_signed_token(key)
    return token.serialize()


def _audience(request) -> list[str]:
    """The resource indicators (RFC 8707) the token is for: those of the token request, else
    those the authorization named (kept on its grant or refresh token), else the client."""
    from oauth2_provider.models import Grant

    resource = getattr(request, "resource", None)
    if isinstance(resource, str) and resource.strip():
        return [resource]
    if isinstance(resource, list) and resource:
        return resource
    if request.grant_type == "authorization_code":
        grant = Grant.objects.filter(code=request.code, application=request.client).first()
        if grant is not None and grant.resource:
            return grant.resource
    held = getattr(request, "refresh_token_instance", None)
    if held is not None and held.resource:
        return held.resource
    return [request.client.client_id]


def access_token(request, refresh_token: bool = False) -> str:
    """ACCESS_TOKEN_GENERATOR: access tokens are JWTs, as Keycloak's and Entra ID's are, so a
    resource server checks them itself: signed with the provider's key (the JWKS has it), its
    issuer, the resource it was asked for as the audience, an expiry, the subject, and the
    person's username and groups. The test switches act on them when `tokens` is "access"
    or "all" (by default they act on ID tokens only)."""
    from oauth2_provider.settings import oauth2_settings

    now = int(time.time())
    audience = _audience(request)
    user = request.user
    claims = {
        "iss": idp_settings.ISSUER,
        "sub": str(user.pk),
        "aud": audience[0] if len(audience) == 1 else audience,
        "iat": now,
        "exp": now + oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS,
        "jti": secrets.token_hex(16),
        "client_id": request.client.client_id,
        "scope": " ".join(request.scopes or []),
        "preferred_username": user.username,
        "email": user.email,
        "groups": sorted(user.groups.values_list("name", flat=True)),
    }
    flags = switches()
    if flags.get("tokens", "id") not in ("access", "all"):
        flags = {}
    if flags.get("expired"):
        claims["iat"], claims["exp"] = now - 3600, now - 1800
    if flags.get("audience"):
        claims["aud"] = flags["audience"]
    if flags.get("issuer"):
        claims["iss"] = flags["issuer"]
    return _signed(claims, forged=flags.get("forge") or False)


class QuickPBKDF2(PBKDF2PasswordHasher):
    """Few rounds: this provider holds demo and test passwords only."""

    algorithm = "pbkdf2_quick"
    iterations = 1000
