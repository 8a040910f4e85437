"""/scim/v2/: each request handed to scim2-server with the console's storage, behind the
identity provider's bearer token (`tokens.py`). The service announces what the console
offers: Users (with the enterprise extension) and Groups; PATCH, filters, sorting and ETags;
no bulk requests and no password changes (accounts here sign in through the provider)."""

from __future__ import annotations

import functools
import json

from django.db import transaction
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from scim2_models import AuthenticationScheme, ScimProvider, UnauthorizedException
from scim2_server.applications.wsgi import WSGIApplication
from scim2_server.requests import ScimRequest
from scim2_server.service import ScimService
from scim2_server.utils import (
    load_default_resource_types,
    load_default_schemas,
    load_default_service_provider_config,
)

from projects import logs
from projects.scim import provisioning, tokens
from projects.scim.storage import ConsoleScimStorage

ROOT = "/scim/v2"


class _Application(WSGIApplication):
    def check_auth(self, request: ScimRequest) -> None:
        scheme, _, raw = (request.header("Authorization") or "").partition(" ")
        token = tokens.token_authenticate(raw.strip()) if scheme.lower() == "bearer" else None
        if token is None:
            raise UnauthorizedException(detail="A valid, unrevoked provisioning bearer token is required.")
        request.subject = token

    def get_subject(self, request: ScimRequest):
        return request.subject

    def dispatch_request(self, request: ScimRequest):
        if self.needs_auth(request):
            self.check_auth(request)
        if request.subject is None:
            return self.handler.handle(request)
        logs.bind(scim=request.subject.name)
        with provisioning.acting_as(request.subject), transaction.atomic():
            return self.handler.handle(request)


@functools.cache
def application() -> _Application:
    config = load_default_service_provider_config()
    config.bulk.supported = False
    config.bulk.max_operations = 0
    config.bulk.max_payload_size = 0
    config.change_password.supported = False
    config.filter.max_results = 200
    config.authentication_schemes = [
        AuthenticationScheme(
            type="oauthbearertoken",
            name="Bearer token",
            description="A provisioning token a superuser made (manage.py scim_token create).",
            primary=True,
        )
    ]
    provider = ScimProvider.from_discovery(
        load_default_schemas().values(), load_default_resource_types().values(), config=config
    )
    service = ScimService(provider)
    storage = ConsoleScimStorage(lambda resource_type: service.get_model(resource_type))
    return _Application(storage, provider, service)


@csrf_exempt
def scim(request, rest: str = ""):
    app = application()
    scim_request = ScimRequest(
        method=request.method,
        base_url=request.build_absolute_uri(ROOT),
        path=app.split_path("/" + rest),
        query=request.GET.dict(),
        headers=list(request.headers.items()),
        body=request.body,
    )
    answer = app.serve(scim_request)
    body = b"" if answer.body is None else json.dumps(answer.body).encode("utf-8")
    response = HttpResponse(body, status=answer.status.value)
    for name, value in answer.headers.items():
        response[name] = value
    response["Cache-Control"] = "no-store"
    return response
