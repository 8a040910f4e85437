"""A sign-in that fails gets a page saying what went wrong and that nobody was signed in:
never a 500, never the library's English. social-auth's errors carry stable codes (and the
claim at fault); each maps to a message here. The HTTP status is the library's (403 for a
refused answer, 502 for a provider's bad answer, 503 or 504 for a provider that is down),
except that a configuration error is a 503 as well."""

from __future__ import annotations

from http import HTTPStatus

from django.conf import settings
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from social_core.exceptions import AuthConfigurationError, AuthProviderError
from social_django.middleware import SocialAuthExceptionMiddleware

from projects import metrics

_UNREACHABLE = {"connection_failed", "timeout", "unavailable", "rate_limited", "tls_error"}


def explain(exc) -> tuple[str, str]:
    """(title, message) for a social-auth error."""
    provider = settings.MGC_OIDC_PROVIDER_NAME
    code, claim, context = exc.code, exc.claim, exc.context
    failed = _("Sign-in failed")
    if isinstance(exc, AuthProviderError) and code in _UNREACHABLE:
        return _("Identity provider unavailable"), _(
            "%(provider)s is not answering, so nobody can sign in through it right now. Try "
            "again later. Administrators can use their break-glass password meanwhile."
        ) % {"provider": provider}
    if isinstance(exc, AuthConfigurationError):
        return failed, _(
            "Single sign-on is not set up correctly (%(code)s): the console's "
            "administrators find the details in its log."
        ) % {"code": code}
    if context.get("message"):
        return failed, context["message"]
    messages = {
        "username_in_use": _(
            "Your username at %(provider)s, %(name)s, is already used by another account in the "
            "console (or reads the same as one). No account was created and nothing was "
            "linked: ask an administrator to rename one of them."
        )
        % {"provider": provider, "name": context.get("username", "")},
        "identity_in_use": _(
            "This identity is linked to another account than the one "
            "signed in here. Nobody was signed in: log out and start again."
        ),
        "authentication_disallowed": _(
            "Your account in the console is deactivated. Ask an administrator if you need it back."
        ),
        "state_mismatch": _(
            "This sign-in answer does not belong to the sign-in started in this "
            "browser (its state does not match). Nobody was signed in: start "
            "again from the login page."
        ),
        "session_context_missing": _(
            "This sign-in answer matches no sign-in started in this "
            "browser (its state is unknown here, or was used already). "
            "Nobody was signed in: start again from the login page."
        ),
        "missing_parameter": _(
            "The sign-in answer lacks a part it must carry (%(what)s). "
            "Nobody was signed in: start again from the login page."
        )
        % {"what": exc.parameter or claim or "state"},
        "authorization_code_rejected": _(
            "%(provider)s refused the sign-in code: it was used "
            "already or has expired. Nobody was signed in: start "
            "again from the login page."
        )
        % {"provider": provider},
        "invalid_signature": _(
            "The ID token's signature matches none of %(provider)s's keys: "
            "it may be forged. Nobody was signed in."
        )
        % {"provider": provider},
        "response_expired": _(
            "The ID token has expired. Nobody was signed in: start again from the login page."
        ),
        "nonce_mismatch": _(
            "The ID token was not issued for this sign-in (its nonce does not match). Nobody was signed in."
        ),
        "authorization_declined": _("The sign-in was cancelled at %(provider)s.") % {"provider": provider},
    }
    if code == "invalid_claim" and claim == "aud":
        return failed, _(
            "The ID token was issued for another application (its audience is not "
            "this console). Nobody was signed in."
        )
    if code == "invalid_claim" and claim == "iss":
        return failed, _(
            "The ID token was issued by someone other than %(provider)s (its "
            "issuer does not match). Nobody was signed in."
        ) % {"provider": provider}
    if code in messages:
        return failed, messages[code]
    return failed, _(
        "Signing in through %(provider)s did not work (%(code)s). Nobody was signed "
        "in: start again from the login page."
    ) % {"provider": provider, "code": code}


def refusal_reason(exc) -> str:
    """How the metric of refused sign-ins names this one."""
    if isinstance(exc, AuthProviderError) and exc.code in _UNREACHABLE:
        return "provider_unavailable"
    if exc.code == "authentication_disallowed":
        return "inactive"
    return "provider"


class SignInErrorMiddleware(SocialAuthExceptionMiddleware):
    def get_error_status(self, request, exception) -> int:
        if isinstance(exception, AuthConfigurationError):
            return HTTPStatus.SERVICE_UNAVAILABLE
        return super().get_error_status(request, exception)

    def render_error(self, request, exception):
        status = self.get_error_status(request, exception)
        metrics.signin_refused(refusal_reason(exception))
        self._log_error(exception, status)
        title, message = explain(exception)
        response = render(
            request,
            "registration/sso_error.html",
            {"title": title, "message": message, "code": exception.code},
            status=status,
        )
        add_never_cache_headers(response)
        return response
