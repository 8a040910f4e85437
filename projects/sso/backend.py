"""The two ways into the console: the identity provider, and local passwords."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.hashers import make_password, verify_password
from django.core.exceptions import PermissionDenied
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_variables
from social_core.backends.open_id_connect import OpenIdConnectAuth

from projects.governance import checkpool, signin


class ConsoleOpenIdConnect(OpenIdConnectAuth):
    """social-auth-core's OpenID Connect backend, configured by the SOCIAL_AUTH_OIDC_*
    settings (memoryadmin/settings.py reads them from MGC_OIDC_*)."""

    name = "oidc"

    def extra_data(self, user, uid, response, details, pipeline_kwargs):
        """Keep no tokens on the shared identity row: each browser session keeps its own
        refresh token (session.py), so two sessions never rotate each other's."""
        data = super().extra_data(user, uid, response, details, pipeline_kwargs)
        for name in ("access_token", "refresh_token", "id_token"):
            data.pop(name, None)
        return data

    def end_session_url(self, *, id_token: str, return_to: str) -> str | None:
        """RP-initiated logout at the provider, when its discovery document offers it."""
        endpoint = self.oidc_config().get("end_session_endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            return None
        query = {"post_logout_redirect_uri": return_to, "client_id": self.setting("KEY")}
        if id_token:
            query["id_token_hint"] = id_token
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


def _verify(password: str, encoded: str) -> tuple[bool, str | None]:
    """Runs on a thread of the pool of checks: whether the password is right, and its new hash
    when the stored one should be remade (both hashes within the one turn). An unknown account
    ("!", unusable) costs a hash too, as Django's own backend makes it."""
    correct, must_update = verify_password(password, encoded)
    return correct, (make_password(password) if correct and must_update else None)


def local_login_allowed(username: str) -> bool:
    mode = settings.MGC_LOCAL_LOGIN
    return mode == "on" or (mode == "breakglass" and username in settings.MGC_BREAKGLASS_USERS)


class LocalPasswordBackend(ModelBackend):
    """Django's password check, limited by MGC_LOCAL_LOGIN: with "breakglass" only the
    accounts in MGC_BREAKGLASS_USERS may use a password (the way in while the provider is
    down), with "off" nobody. Sessions begun with a password end when that stops being
    allowed, since Django asks this for every request's user too."""

    @method_decorator(sensitive_variables("password"))
    def authenticate(self, request, username=None, password=None, **kwargs):
        """ModelBackend's sign-in, its password check in a turn of the pool of checks
        (projects.governance.checkpool): a sign-in from a browser with a device cookie for the
        account goes first. With every turn taken and the queue full it is refused as busy,
        nothing hashed. An unknown account is hashed for too (Django's timing mitigation)."""
        UserModel = get_user_model()
        if username is None:
            username = kwargs.get(UserModel.USERNAME_FIELD)
        if username is None or password is None:
            return None
        try:
            user = UserModel._default_manager.get_by_natural_key(username)
        except UserModel.DoesNotExist:
            user = None
        client = getattr(request, "mgc_signin_client", None)
        try:
            correct, rehashed = checkpool.pool().check(
                _verify,
                password,
                user.password if user else "!",
                trusted=client is not None and client.trusted,
            )
        except checkpool.Busy as busy:
            if request is None:
                raise PermissionDenied("busy") from busy
            signin.refuse(request, signin.Refusal("busy", busy.retry_after))
        if not correct or user is None or not self.user_can_authenticate(user):
            return None
        if rehashed:  # made with an older hasher or fewer rounds: kept in today's
            user.password = rehashed
            user.save(update_fields=["password"])
        return user

    def user_can_authenticate(self, user) -> bool:
        return super().user_can_authenticate(user) and local_login_allowed(user.get_username())
