"""The console's URLs plus the floors its pre hook is measured against.

`api/bench/floor` is what any hook that writes a receipt must do at least: authenticate the
bearer token by its hash (the runner API's own lookup) and insert one row in one transaction.
It sits under the API root, so it passes the same middleware as /api/v1/hooks/pre.

`api/bench/post-floor` is what a post hook that saves a file must do at least: the same
bearer lookup, then, in one transaction, one conditional PUT of the file's new bytes to the
project's bucket through the console's storage (If-Match the ETag it left last time,
If-None-Match for a new key) and one row INSERT. It keeps the texts and ETags it wrote in
this process (a floor knows its head without asking), so an append sends one line, as a
runner does. With "snapshot" it first writes an immutable copy (If-None-Match), as every save
does before its head: the floor of the save's own two-PUT design.
"""

import json

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


_FLOOR_HEADS: dict[str, tuple[str, str]] = {}  # key -> (text, ETag) the post floor wrote
_FLOOR_SNAPSHOTS: dict[str, int] = {}


@csrf_exempt
def post_floor(request):
    from projects.memory.storage import storage_for

    header = request.headers.get("Authorization", "")
    token = bearer.token_authenticate(header[7:] if header.startswith("Bearer ") else "")
    if token is None:
        return api_error(401, "unauthorized", "A valid bearer token is required.")
    body = json.loads(request.body)
    key = f"{token.agent.project.prefix}bench-floor/{body['name']}"
    text, etag = _FLOOR_HEADS.get(key, ("", ""))
    text = text + body["append"] if "append" in body else body["content"]
    data = text.encode()
    storage = storage_for(token.agent.project)
    with transaction.atomic():
        if body.get("snapshot"):  # the save's own order: an immutable copy first, then the head
            number = len(_FLOOR_HEADS) + _FLOOR_SNAPSHOTS.setdefault("n", 0) + 1
            _FLOOR_SNAPSHOTS["n"] = number
            storage.write(f"{key}.history/{number}", data, if_none_match=True)
        etag = storage.write(key, data, if_match=etag, if_none_match=not etag)
        session = AgentSession.objects.create(agent=token.agent, external_ref="bench-post-floor")
    _FLOOR_HEADS[key] = (text, etag)
    return JsonResponse({"session": str(session.pk), "etag": etag})


urlpatterns = [
    path("bench/ping/", ping),
    path("api/bench/floor", floor),
    path("api/bench/post-floor", post_floor),
    path("", include("memoryadmin.urls")),
]
