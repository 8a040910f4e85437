"""Control calls for tests (never part of a real provider): users, their groups, disabling,
deleting, and the ID token switches. Each needs the control token given at start."""

from __future__ import annotations

import hmac
import json

from django.contrib.auth.models import Group, User
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.views import ConnectDiscoveryInfoView, IntrospectTokenView

from devtools.oidc_provider import settings as idp_settings
from devtools.oidc_provider.validator import SWITCHES


def _allowed(request) -> bool:
    given = request.headers.get("Authorization", "").removeprefix("Bearer ")
    return bool(idp_settings.CONTROL_TOKEN) and hmac.compare_digest(given, idp_settings.CONTROL_TOKEN)


def control(view):
    @csrf_exempt
    @require_POST
    def guarded(request, *args, **kwargs):
        if not _allowed(request):
            return HttpResponse(status=403)
        body = json.loads(request.body or b"{}")
        return view(request, body, *args, **kwargs)

    return guarded


def user_put(
    username: str,
    *,
    password: str | None = None,
    groups: list[str] | None = None,
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    is_active: bool = True,
) -> User:
    user, _ = User.objects.get_or_create(username=username)
    user.email, user.first_name, user.last_name = email, first_name, last_name
    user.is_active = is_active
    if password:
        user.set_password(password)
    user.save()
    if groups is not None:
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])
    return user


@control
def users(request, body):
    if body.get("rename_from"):
        User.objects.filter(username=body["rename_from"]).update(username=body["username"])
    user = user_put(
        body["username"],
        password=body.get("password"),
        groups=body.get("groups"),
        email=body.get("email", ""),
        first_name=body.get("first_name", ""),
        last_name=body.get("last_name", ""),
        is_active=body.get("is_active", True),
    )
    return JsonResponse({"sub": str(user.pk), "username": user.username})


@control
def user_disable(request, body, username):
    changed = User.objects.filter(username=username).update(is_active=False)
    return JsonResponse({"disabled": changed})


@control
def user_delete(request, body, username):
    deleted, _ = User.objects.filter(username=username).delete()
    return JsonResponse({"deleted": deleted})


@control
def switches(request, body):
    (idp_settings.DATA / SWITCHES).write_text(json.dumps(body))
    return JsonResponse(body)


@control
def client(request, body):
    from oauth2_provider.models import Application

    # The console's own client (confidential), not the public one MCP hosts sign in with.
    app = Application.objects.get(client_type=Application.CLIENT_CONFIDENTIAL)
    for field, uri in (
        ("redirect_uris", body["redirect_uri"]),
        ("post_logout_redirect_uris", body["post_logout_uri"]),
    ):
        uris = getattr(app, field).split()
        if uri not in uris:
            setattr(app, field, " ".join([*uris, uri]))
    app.save(update_fields=["redirect_uris", "post_logout_redirect_uris"])
    return JsonResponse({"redirect_uris": app.redirect_uris})


# --- What Keycloak does and django-oauth-toolkit leaves out -----------------------------------


class Discovery(ConnectDiscoveryInfoView):
    """The discovery document, naming the introspection endpoint too (Keycloak's does): a
    resource server finds there where to ask whether a token still stands."""

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        data = json.loads(response.content)
        data["introspection_endpoint"] = request.build_absolute_uri("/o/introspect/")
        data["introspection_endpoint_auth_methods_supported"] = ["client_secret_basic"]
        answer = JsonResponse(data)
        answer["Access-Control-Allow-Origin"] = "*"
        return answer


class Introspection(IntrospectTokenView):
    """RFC 7662, as Keycloak answers it: a token whose person was disabled since it was issued
    is no longer active (the toolkit alone checks only expiry and revocation)."""

    @staticmethod
    def get_token_response(token_value=None):
        response = IntrospectTokenView.get_token_response(token_value)
        data = json.loads(response.content)
        active = User.objects.filter(username=data.get("username"), is_active=True).exists()
        if data.get("active") and not active:
            return JsonResponse({"active": False})
        return response
