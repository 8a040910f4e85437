"""Offboarding: a signed-in person keeps access only while the identity provider vouches
for them.

Each session begun through the provider keeps that sign-in's refresh token (server-side, in
the session row). Once MGC_OIDC_RECHECK_SECONDS have passed since the provider last
confirmed it, the next request asks again: a refresh-token grant at the token endpoint,
whose new ID token social-auth validates like the first (signature, issuer, audience,
expiry) and which must name the same subject. A provider that refuses (the person is
disabled or deleted there, or their provider session was ended) ends the console session at
that request. A provider that does not answer cannot vouch either: the request gets a page
saying so (503) and the session waits for the provider instead of being thrown away.
docs/DEPLOY.md says why this rather than SCIM alone.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout, user_logged_in
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.dispatch import receiver
from django.shortcuts import render
from django.utils.translation import gettext as _
from social_core.exceptions import AuthConfigurationError, AuthProviderError, SocialAuthBaseException
from social_django.utils import load_backend, load_strategy

from projects import metrics
from projects.audit import Actor, audit_record
from projects.governance import groups as group_service
from projects.middleware import is_api

KEY = "mgc_provider_session"
log = logging.getLogger(__name__)


@receiver(user_logged_in)
def _keep_provider_session(sender, request, user, **kwargs):
    pending = getattr(request, "mgc_provider_session", None) if request is not None else None
    if pending is not None:
        request.session[KEY] = pending


def provider_backend(request):
    return load_backend(load_strategy(request), "oidc", redirect_uri=None)


class ProviderSessionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api(request) and request.user.is_authenticated:
            data = request.session.get(KEY)
            if data is not None and time.time() >= data["checked_at"] + settings.MGC_OIDC_RECHECK_SECONDS:
                refused = self._recheck(request, data)
                if refused is not None:
                    return refused
        return self.get_response(request)

    def _recheck(self, request, data: dict):
        # One re-check per session at a time: requests of a page load arrive together, and a
        # rotated refresh token may be used once.
        lock = f"mgc-provider-recheck:{request.session.session_key}"
        if not cache.add(lock, 1, timeout=30):
            return None
        try:
            return self._confirm(request, data)
        finally:
            cache.delete(lock)

    def _confirm(self, request, data: dict):
        if not settings.MGC_OIDC_ENABLED:
            return self._end(request, "sso_turned_off")
        if not data.get("refresh_token"):
            # No refresh token (a provider that issues none without offline_access): the
            # sign-in lasts as long as its ID token, then the person signs in again.
            if data.get("expires_at") and time.time() < data["expires_at"]:
                return None
            return self._end(request, "id_token_expired")
        backend = provider_backend(request)
        try:
            answer = backend.refresh_token(data["refresh_token"])
            groups = None
            if backend.id_token is not None:
                backend.validate_refresh_id_token_claims(data["context"], backend.id_token)
                groups = backend.get_user_groups(answer)
        except (AuthProviderError, AuthConfigurationError) as exc:
            log.warning(
                "cannot re-confirm a session with the identity provider: %s (%s)", exc.code, exc.detail
            )
            return render(
                request,
                "registration/sso_error.html",
                {
                    "title": _("Identity provider unavailable"),
                    "message": _(
                        "The console cannot confirm your sign-in with %(provider)s: it is "
                        "not answering. Nothing was lost; try again in a moment."
                    )
                    % {"provider": settings.MGC_OIDC_PROVIDER_NAME},
                },
                status=503,
            )
        except SocialAuthBaseException as exc:
            return self._end(request, exc.code)
        data.update(
            refresh_token=answer.get("refresh_token") or data["refresh_token"],
            id_token=answer.get("id_token") or data["id_token"],
            checked_at=time.time(),
        )
        request.session[KEY] = data
        if groups is not None:  # a fresh ID token: memberships follow its groups
            group_service.memberships_follow_groups(user=request.user, groups=groups)
        return None

    def _end(self, request, reason: str):
        user = request.user
        audit_record(
            actor=Actor.system("sign-in"),
            action="session.ended",
            obj=user,
            details={"user": user.get_username(), "reason": reason},
        )
        log.info("identity provider no longer vouches for %s (%s): signed out", user.get_username(), reason)
        metrics.sessions_ended.labels("recheck").inc()
        path = request.get_full_path()
        logout(request)
        messages.error(
            request,
            _(
                "%(provider)s no longer confirms your sign-in (your account "
                "there may be disabled, or your session there ended). Sign in "
                "again to go on."
            )
            % {"provider": settings.MGC_OIDC_PROVIDER_NAME},
        )
        return redirect_to_login(path if request.method == "GET" else "/")
