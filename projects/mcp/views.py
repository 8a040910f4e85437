"""The MCP endpoint (/mcp/ and /mcp/<project>/<agent>/) and its protected resource metadata
(RFC 9728), as Django views in the console's own processes.

POST carries one JSON-RPC message and gets one JSON answer (a notification or a response:
202, empty); GET is 405 (no server-sent stream is offered: nothing here speaks first);
DELETE ends the session. Every request needs a bearer token (auth.py); without a valid one
the answer is 401 with `WWW-Authenticate: Bearer resource_metadata="..."`, which sends an MCP
client to the metadata and from there to the identity provider."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.csrf import csrf_exempt
from mcp.shared.auth import ProtectedResourceMetadata
from mcp.types import jsonrpc

from projects.mcp import auth, protocol, sessions

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"


def _json(body: dict | None, status: int = 200, **headers) -> HttpResponse:
    response = JsonResponse(body, status=status) if body is not None else HttpResponse(status=status)
    for name, value in headers.items():
        response[name] = value
    add_never_cache_headers(response)
    return response


def _challenge(request, refused: auth.Unauthorized) -> HttpResponse:
    parts = []
    if settings.MGC_OIDC_ENABLED:
        parts.append(f'resource_metadata="{auth.metadata_url(request, request.path)}"')
        if settings.MGC_MCP_SCOPES:
            parts.append(f'scope="{" ".join(settings.MGC_MCP_SCOPES)}"')
    else:
        parts.append('realm="mcp"')
    if refused.error:
        description = refused.description.replace('"', "'")
        parts += [f'error="{refused.error}"', f'error_description="{description}"']
    body = protocol.error_body(None, jsonrpc.INVALID_REQUEST, f"Unauthorized: {refused.description}")
    return _json(body, 401, **{"WWW-Authenticate": "Bearer " + ", ".join(parts)})


def _origin_allowed(request) -> bool:
    """A browser page elsewhere must not drive the endpoint (the specification's DNS
    rebinding rule): an Origin header, when sent, is this console's or a trusted one."""
    origin = request.headers.get("Origin")
    if not origin or origin == "null":
        return origin is None
    here = f"{request.scheme}://{request.get_host()}"
    return origin == here or origin in settings.CSRF_TRUSTED_ORIGINS


@csrf_exempt
def endpoint(request, project: str | None = None, agent: str | None = None):
    if not _origin_allowed(request):
        return _json(
            protocol.error_body(None, jsonrpc.INVALID_REQUEST, "This Origin may not call here."), 403
        )
    try:
        caller = auth.authenticate(request)
    except auth.Unauthorized as refused:
        return _challenge(request, refused)
    except auth.ProviderDown:
        body = protocol.error_body(
            None,
            jsonrpc.INTERNAL_ERROR,
            "The identity provider is not answering, so this sign-in cannot be confirmed now. "
            "Nothing was lost; try again in a moment.",
        )
        return _json(body, 503, **{"Retry-After": "5"})
    url_agent = None
    if project is not None:
        url_agent = sessions.agent_named(caller, project, agent)
        if url_agent is None:  # none there, or not the caller's to reach: the same answer
            return _json(protocol.error_body(None, jsonrpc.INVALID_REQUEST, "No such agent here."), 404)
    if request.method == "GET":
        return _json(None, 405, Allow="POST, DELETE")
    if request.method == "DELETE":
        mcp = _session(request, caller, url_agent)
        if mcp is None:
            return _json(protocol.error_body(None, jsonrpc.INVALID_REQUEST, "No such session."), 404)
        sessions.session_end(mcp, "client_left")
        return _json(None, 204)
    if request.method != "POST":
        return _json(None, 405, Allow="POST, DELETE")
    return _post(request, caller, url_agent)


def _post(request, caller, url_agent):
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = -1
    if length < 0 or length > settings.MGC_API_MAX_BODY_BYTES:
        message = f"Request bodies are limited to {settings.MGC_API_MAX_BODY_BYTES:,} bytes."
        return _json(protocol.error_body(None, jsonrpc.INVALID_REQUEST, message), 413)
    try:
        message = protocol.parse(request.body)
    except protocol.RpcError as exc:
        return _json(protocol.error_body(None, exc.code, exc.message), exc.status)
    exchange = protocol.Exchange(caller=caller, url_agent=url_agent)
    is_request = isinstance(message, jsonrpc.JSONRPCRequest)
    if not (is_request and message.method == "initialize"):
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in protocol.PROTOCOL_VERSIONS:
            body = protocol.error_body(
                None, jsonrpc.INVALID_REQUEST, f"Unsupported protocol version {version}."
            )
            return _json(body, 400)
        if not request.headers.get(SESSION_HEADER):
            body = protocol.error_body(
                None, jsonrpc.INVALID_REQUEST, "Mcp-Session-Id is required after initialize."
            )
            return _json(body, 400)
        exchange.session = _session(request, caller, url_agent)
        if exchange.session is None:  # unknown, ended or someone else's: start a new one
            return _json(protocol.error_body(None, jsonrpc.INVALID_REQUEST, "No such session."), 404)
    if not is_request:  # a notification, or an answer to a request this server never sends
        return _json(None, 202)
    body = protocol.answer(exchange, message)
    return _json(body, 200, **exchange.headers)


def _session(request, caller, url_agent):
    mcp = sessions.session_for(request.headers.get(SESSION_HEADER, ""), caller)
    if mcp is not None and url_agent is not None and mcp.agent_id not in (None, url_agent.pk):
        return None  # a session of another agent's endpoint
    return mcp


def resource_metadata(request, path: str = ""):
    """RFC 9728: what this resource is and who issues its tokens (the company's identity
    provider). At the root for /mcp/, and with the endpoint's path after it for each one."""
    if not settings.MGC_OIDC_ENABLED:
        return _json({"error": "not_found", "error_description": "Single sign-on is off."}, 404)
    target = path or "/mcp/"
    if not urlsplit(target).path.startswith("/mcp"):
        return _json({"error": "not_found"}, 404)
    metadata = ProtectedResourceMetadata(
        resource=auth.resource(request, target),
        authorization_servers=[settings.MGC_OIDC_ISSUER],
        scopes_supported=settings.MGC_MCP_SCOPES or None,
        bearer_methods_supported=["header"],
        resource_name="Memory Governance Console",
    )
    body = json.loads(metadata.model_dump_json(exclude_none=True))
    response = _json(body)
    response["Access-Control-Allow-Origin"] = "*"  # public metadata, for browser-based clients too
    return response
