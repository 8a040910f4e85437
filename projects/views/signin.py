"""Signing in: the page shown during a lockout, the admins' list of lockouts with Unlock, and
the set-password link's form held to a rate. The counting of sign-ins is django-axes'
(settings "Sign-in"); projects.governance.signin gives it its keys and counts the rest."""

import functools

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _

from projects.governance import permissions, signin


def lockout_response(request, original_response=None, credentials=None):
    """django-axes' lockout answer (AXES_LOCKOUT_CALLABLE): a page that says why and for how
    long, 429. The password was not checked."""
    if getattr(request, "mgc_signin_busy", False):
        return render(request, "registration/throttled.html", {"busy": True}, status=429)
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(
        request,
        "registration/locked_out.html",
        {"failure_limit": settings.AXES_FAILURE_LIMIT, "cooloff_minutes": minutes},
        status=429,
    )


@login_required
def lockouts_view(request):
    """Failed sign-ins within the cool-off, by account name and by address; Unlock forgets
    them (audited). Superusers only: accounts are global."""
    permissions.require(permissions.can_manage_accounts(request.user))
    if request.method == "POST":
        kind, value = request.POST.get("kind", ""), request.POST.get("value", "")
        if kind in ("username", "ip_address") and value and "\x00" not in value:
            signin.lockout_lift(by=request.user, kind=kind, value=value)
            messages.success(
                request, _("Unlocked %(value)s: its failed sign-ins are forgotten.") % {"value": value}
            )
        return redirect("lockouts")
    return render(
        request,
        "registration/lockouts.html",
        {
            "lockouts": signin.lockouts(),
            "limit": settings.AXES_FAILURE_LIMIT,
            "minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
        },
    )


def throttle_posts(view):
    """POSTs over MGC_SET_PASSWORD_RATE per client address or per URL get a 429 page before
    the view reads the form (the first refusal of a window is audited)."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method == "POST":
            names = [f"client:{signin.client_ip(request)}", f"path:{request.path}"]
            over = [name for name in names if signin.over_rate(name, settings.MGC_SET_PASSWORD_RATE)]
            if over:
                signin.throttle_note(request, over)
                return render(request, "registration/throttled.html", status=429)
        return view(request, *args, **kwargs)

    return wrapped


@method_decorator(throttle_posts, name="dispatch")
class SetPasswordView(auth_views.PasswordResetConfirmView):
    """The one-time set-password link: at most MGC_SET_PASSWORD_RATE posts per client address
    and per link, so neither guessing nor a flood of new passwords (each hashed) gets far."""
