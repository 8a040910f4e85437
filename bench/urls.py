"""The console's URLs plus the floors its pre hook is measured against.

`api/bench/floor` is what any hook that writes a receipt must do at least: authenticate the
bearer token by its hash (the runner API's own lookup) and insert one row in one transaction.
It sits under the API root, so it passes the same middleware as /api/v1/hooks/pre.
"""

from django.db import transaction
from django.http import JsonResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from projects.middleware import api_error
from projects.models import AgentSession
from projects.runners import bearer


def ping(request):
    return JsonResponse({"ok": True})


@csrf_exempt  # a bearer-token endpoint, as the runner API is
def floor(request):
    header = request.headers.get("Authorization", "")
    token = bearer.token_authenticate(header[7:] if header.startswith("Bearer ") else "")
    if token is None:
        return api_error(401, "unauthorized", "A valid bearer token is required.")
    with transaction.atomic():
        session = AgentSession.objects.create(agent=token.agent, external_ref="bench-floor")
    return JsonResponse({"session": str(session.pk)})


urlpatterns = [
    path("bench/ping/", ping),
    path("api/bench/floor", floor),
    path("", include("memoryadmin.urls")),
]
