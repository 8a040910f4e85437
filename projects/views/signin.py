"""Signing in: the login view (a device cookie at success), the page of a refused sign-in, the
admins' list of lockouts with Unlock, and the set-password link's form held to a rate. What is
refused and why is projects.governance.signin's."""

import functools
import math

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.templatetags.static import static
from django.utils import translation
from django.utils.decorators import method_decorator
from django.utils.html import escape
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from projects.governance import devices, lockouts, permissions, rates, signin


class SignInView(auth_views.LoginView):
    """Django's login view. A sign-in the guard refused (projects.governance.signin) is
    answered 429 with Retry-After, not as a wrong password; a right one leaves the device
    cookie for its account in the browser."""

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        refusal = getattr(request, "mgc_signin_refusal", None)
        return refusal_response(request, refusal) if refusal is not None else response

    def form_valid(self, form):
        response = super().form_valid(form)
        client = getattr(self.request, "mgc_signin_client", None)
        if client is not None:
            signin.success_record(client)
            devices.device_issue(response, account=client.account, device=client.device)
        return response


def _wait(seconds: int) -> str:
    if seconds < 120:
        return ngettext("%(n)d second", "%(n)d seconds", seconds) % {"n": seconds}
    minutes = math.ceil(seconds / 60)
    return ngettext("%(n)d minute", "%(n)d minutes", minutes) % {"n": minutes}


def _refusal_text(refusal: signin.Refusal) -> tuple[str, str]:
    wait = _wait(refusal.retry_after)
    if refusal.kind == "busy":
        return _("Too many sign-ins at once"), _(
            "Too many sign-ins are being checked right now, so yours was not checked (this is not a "
            "failed sign-in). Try again in %(wait)s."
        ) % {"wait": wait}
    if refusal.kind == "slowed":
        return _("Sign-in slowed down"), _(
            "This account has had many failed sign-ins from other places, so its sign-ins from "
            "browsers it was not used in before are spaced out. Try again in %(wait)s. In a browser "
            "you signed in with before this does not apply. Your password was not checked."
        ) % {"wait": wait}
    if refusal.kind == "address":
        return _("Sign-in paused"), _(
            "Too many failed sign-ins from this address, for several accounts: sign-ins from it are "
            "paused for %(wait)s, except in browsers that signed in here before. Your password was "
            "not checked."
        ) % {"wait": wait}
    return _("Sign-in paused"), _(
        "Too many failed sign-ins for this account from here: its sign-ins from this browser or "
        "address are paused for %(wait)s. In a browser you signed in with before you can still "
        "sign in, and an administrator can unlock it (Sign-in lockouts). Your password was not "
        "checked."
    ) % {"wait": wait}


_PAGE = (
    '<!doctype html><html lang="{lang}"><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<title>{title}</title><link rel="stylesheet" href="{css}">'
    '<main id="content"><section class="card narrow"><h1>{title}</h1>'
    '<p class="error" role="alert">{text}</p><p><a href="{url}">{back}</a></p></section></main></html>'
)


@functools.cache
def _urls() -> tuple[str, str]:
    """The stylesheet's and the login page's URLs (fixed while the process runs)."""
    return static("css/console.css"), resolve_url(settings.LOGIN_URL)


@functools.lru_cache(maxsize=1024)
def _page(language: str, refusal: signin.Refusal) -> bytes:
    """The page, made once per language, reason and wait: a flood gets the same few pages."""
    with translation.override(language):
        title, text = _refusal_text(refusal)
        return _PAGE.format(
            lang=escape(language),
            title=escape(title),
            css=escape(_urls()[0]),
            text=escape(text),
            url=escape(_urls()[1]),
            back=escape(_("Back to sign-in")),
        ).encode()


def refusal_response(request, refusal: signin.Refusal) -> HttpResponse:
    """A refused sign-in: 429, Retry-After, a short page that says why and for how long. Made
    without templates, sessions or queries: the door middleware answers a flood with it."""
    body = _page(translation.get_language_from_request(request), refusal)
    response = HttpResponse(
        body, status=429, headers={"Retry-After": str(refusal.retry_after), "Content-Length": str(len(body))}
    )
    # Not a line in the log per refusal (Django logs every 4xx): a flood would write hundreds a
    # second. The lockout itself is audited and logged once, when it begins.
    response._has_been_logged = True
    return response


@login_required
def lockouts_view(request):
    """Accounts locked for one client, addresses paused, accounts slowed; Unlock forgets the
    failures behind one (audited). Superusers only: accounts are global."""
    permissions.require(permissions.can_manage_accounts(request.user))
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        fields = {name: request.POST.get(name, "") for name in ("account", "client", "address")}
        if kind in ("pair", "address", "account") and not any("\x00" in value for value in fields.values()):
            try:
                lockouts.lockout_lift(by=request.user, kind=kind, **fields)
            except ValueError:
                pass
            else:
                shown = fields["account"] or fields["address"]
                messages.success(
                    request, _("Unlocked %(value)s: its failed sign-ins are forgotten.") % {"value": shown}
                )
        return redirect("lockouts")
    return render(
        request,
        "registration/lockouts.html",
        {
            "lockouts": lockouts.lockouts(),
            "counting": lockouts.failures_counting(),
            "limit": settings.MGC_LOGIN_FAILURE_LIMIT,
            "address_limit": settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT,
            "minutes": settings.MGC_LOGIN_LOCKOUT_MINUTES,
            "max_delay": settings.MGC_LOGIN_SLOWDOWN_MAX_SECONDS,
        },
    )


def throttle_posts(view):
    """POSTs over MGC_SET_PASSWORD_RATE per client address or per URL get a 429 page before
    the view reads the form (the first refusal of a window is audited)."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method == "POST":
            names = [f"client:{signin.client_ip(request)}", f"path:{request.path}"]
            over = [name for name in names if rates.over_rate(name, settings.MGC_SET_PASSWORD_RATE)]
            if over:
                rates.throttle_note(request, over, signin.client_ip(request))
                return render(request, "registration/throttled.html", status=429)
        return view(request, *args, **kwargs)

    return wrapped


@method_decorator(throttle_posts, name="dispatch")
class SetPasswordView(auth_views.PasswordResetConfirmView):
    """The one-time set-password link: at most MGC_SET_PASSWORD_RATE posts per client address
    and per link, so neither guessing nor a flood of new passwords (each hashed) gets far."""
