"""Begin a sign-in at the provider, take its answer, and log out of both."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import logout as auth_logout
from django.http import Http404
from django.shortcuts import redirect, resolve_url
from django.urls import reverse
from django.views.decorators.http import require_POST
from social_core.exceptions import SocialAuthBaseException
from social_django import views as social_views
from social_django.utils import load_backend, load_strategy

from projects.sso.session import KEY, provider_backend


def _sso_or_404(backend: str) -> None:
    if not settings.MGC_OIDC_ENABLED or backend != "oidc":
        raise Http404("Single sign-on is off.")


@require_POST
def begin(request, backend):
    """The login page's "Sign in with ..." button (a POST with the CSRF token). Anyone
    signed in is signed out first, so a sign-in never links an identity to the account
    that happened to be open in the browser."""
    _sso_or_404(backend)
    if request.user.is_authenticated:
        auth_logout(request)
    # Read the discovery document afresh (one request): a provider that is down is told
    # here, on the console's page, not as a browser error at its address; and rotated
    # endpoints are seen at once. Failures go to errors.SignInErrorMiddleware.
    request.social_strategy = strategy = load_strategy(request)
    request.backend = provider = load_backend(strategy, backend, redirect_uri=None)
    provider.get_openid_configuration.invalidate(provider, provider.oidc_config_url())
    provider.oidc_config()
    return social_views.auth(request, backend)


def complete(request, backend):
    """The provider's redirect back (the redirect URI registered there)."""
    _sso_or_404(backend)
    return social_views.complete(request, backend)


@require_POST
def logout(request):
    """Sign out here, and at the provider too when the sign-in came from it and its discovery
    document names an end_session_endpoint (RP-initiated logout); it sends the browser back
    to the login page."""
    provider_session = request.session.get(KEY)
    auth_logout(request)
    if provider_session and settings.MGC_OIDC_ENABLED:
        back = request.build_absolute_uri(reverse("login"))
        try:
            url = provider_backend(request).end_session_url(
                id_token=provider_session.get("id_token", ""), return_to=back
            )
        except SocialAuthBaseException:  # the provider is down: the console's part is done
            url = None
        if url:
            return redirect(url)
    return redirect(resolve_url(settings.LOGOUT_REDIRECT_URL))
