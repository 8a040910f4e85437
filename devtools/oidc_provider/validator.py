"""What this provider says about a user, and the test switches that make it misbehave.

The switches live in a JSON file in the provider's folder (the /testing/switches control call
writes it), so every worker process reads the same ones."""

from __future__ import annotations

import base64
import json
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
        key = _other_key() if flags.get("forge") else request.client.jwk_key
        # The real key's id either way: a forger copies the header.
        header = {"typ": "JWT", "alg": "RS256", "kid": request.client.jwk_key.thumbprint()}
        token_out = jwt.JWT(header=json.dumps(header), claims=json.dumps(claims))
        token_out.make_signed_token(key)
        return token_out.serialize()


class QuickPBKDF2(PBKDF2PasswordHasher):
    """Few rounds: this provider holds demo and test passwords only."""

    algorithm = "pbkdf2_quick"
    iterations = 1000
