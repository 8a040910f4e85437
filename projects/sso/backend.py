"""The two ways into the console: the identity provider, and local passwords."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
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


def local_login_allowed(username: str) -> bool:
    mode = settings.MGC_LOCAL_LOGIN
    return mode == "on" or (mode == "breakglass" and username in settings.MGC_BREAKGLASS_USERS)


class LocalPasswordBackend(ModelBackend):
    """Django's password check, limited by MGC_LOCAL_LOGIN: with "breakglass" only the
    accounts in MGC_BREAKGLASS_USERS may use a password (the way in while the provider is
    down), with "off" nobody. Sessions begun with a password end when that stops being
    allowed, since Django asks this for every request's user too."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        """The password check, in a turn of the pool of checks (projects.governance.checkpool):
        a sign-in from a browser with a device cookie for the account goes first. With every
        turn taken and the queue full it is refused as busy, nothing hashed."""
        if password is None:
            return None
        client = getattr(request, "mgc_signin_client", None)
        try:
            with checkpool.pool().slot(trusted=client is not None and client.trusted):
                return super().authenticate(request, username=username, password=password, **kwargs)
        except checkpool.Busy as busy:
            if request is None:
                raise PermissionDenied("busy") from busy
            signin.refuse(request, signin.Refusal("busy", busy.retry_after))

    def user_can_authenticate(self, user) -> bool:
        return super().user_can_authenticate(user) and local_login_allowed(user.get_username())
