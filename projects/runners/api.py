"""The runner API (JSON over HTTPS, bearer token per agent, scoped to the agent's project).

django-ninja builds it: request bodies are pydantic models that forbid unknown fields
(`runners.api_bodies`), and the OpenAPI description at /api/v1/openapi.json comes from the same
code, so the published schema cannot drift from what is enforced. Every error is JSON
{"error": {"code", "message"}} (`errors.error_body`) with a 4xx status for the caller's
mistakes; storage trouble is a 503, never a 500.
"""

from __future__ import annotations

import functools
import json
import uuid

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import Http404, HttpRequest, JsonResponse
from ninja import NinjaAPI, Status
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer

from projects import jsontext, logs
from projects.errors import Refusal, error_body
from projects.memory import errors, layout, receipts
from projects.models import AgentSession
from projects.runners import bearer, hooks, idempotency, injection, prehook, reads, schemas
from projects.runners.api_bodies import (
    ErrorIn,
    ErrorOut,
    EventOut,
    FilesIn,
    FilesOut,
    PostIn,
    PostOut,
    PreIn,
    PreOut,
    ReadIn,
    ReadOut,
    SandboxIn,
    SandboxOut,
    ToolIn,
    storable,
)
from projects.runners.policy import HookError


class RunnerAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        return bearer.token_authenticate(token)


class _Parser(Parser):
    """JSON bodies nested deeper than `jsontext.MAX_DEPTH`, or holding NaN, Infinity or numbers
    beyond a float, are a 400 like unparsable ones (they would exhaust the stack, or break
    PostgreSQL's jsonb, later); free-form strings are made storable (`storable`)."""

    def parse_body(self, request):
        return jsontext.loads_storable(request.body)


# Every version of the runner API lives under API_ROOT (the middleware answers JSON for all of
# it, unknown versions included); this one is mounted at API_V1 by memoryadmin/urls.py.
API_ROOT = "api/"
API_V1 = f"{API_ROOT}v1/"

api = NinjaAPI(
    title="Memory Governance Console runner API",
    version="1.0.0",
    urls_namespace="api",
    docs_url=None,
    auth=RunnerAuth(),
    parser=_Parser(),
)


def _error(request, status: int, code: str, message: str, **extra):
    return api.create_response(request, error_body(code, message, **extra), status=status)


@api.exception_handler(NinjaValidationError)
def _invalid(request, exc):
    # Well-formed JSON that breaks the schema (a wrong type, a number out of range, an unknown
    # field): 422. JSON that cannot be parsed at all is a 400 (malformed_json, below).
    details = [{"loc": _location(e.get("loc", [])), "msg": e.get("msg", "")} for e in exc.errors]
    return _error(
        request, 422, "invalid_request", "The request body does not match the schema.", details=details
    )


def _location(loc) -> list[str]:
    """Where a field is, as the caller wrote it: ["body", "writes", "0", "base_revision"], not
    django-ninja's ["body", "body", ...] (the second "body" is the name of the view's
    parameter) nor pydantic's name of the write's kind after its index (a write is one schema
    per mode: ["...", "0", "replace", "base_revision"])."""
    parts = [str(part) for part in loc]
    if parts[:2] == ["body", "body"]:
        parts = parts[:1] + parts[2:]
    return [
        part
        for index, part in enumerate(parts)
        if not (index and parts[index - 1].isdigit() and part in schemas.MODES and index + 1 < len(parts))
    ]


@api.exception_handler(AuthenticationError)
def _unauthorized(request, exc):
    return _error(request, 401, "unauthorized", "A valid, unrevoked bearer token for an agent is required.")


@api.exception_handler(HttpError)
def _http_error(request, exc):
    code = "malformed_json" if exc.status_code == 400 else "http_error"
    return _error(request, exc.status_code, code, str(exc.message))


@api.exception_handler(Http404)
def _not_found(request, exc):
    return _error(request, 404, "not_found", str(exc) or "Not found.")


# How each refusal answers: the one table from domain errors to HTTP statuses.
_STATUS_BY_CODE = {
    "policy_denied": 403,
    "not_pending": 409,
    "iam_unavailable": 503,
    "profile_erased": 409,
    "manifest_invalid": 409,
    "agent_archived": 409,
    "project_archived": 409,
}
_STATUS_BY_CLASS = ((errors.StorageUnavailable, 503), (errors.StoreError, 409), (HookError, 400))


def status_of(exc: Refusal) -> int:
    if exc.code in _STATUS_BY_CODE:
        return _STATUS_BY_CODE[exc.code]
    return next((status for kind, status in _STATUS_BY_CLASS if isinstance(exc, kind)), 400)


@api.exception_handler(Refusal)
def _refused(request, exc):
    idempotency.release(getattr(request, "idempotency_record", None))
    extra = {}
    if isinstance(exc, errors.StorageUnavailable):
        # "unknown": the write may have landed; the same request again (same Idempotency-Key)
        # settles it without writing twice.
        extra["outcome"] = exc.outcome
    return _error(request, status_of(exc), exc.code, exc.message, **extra)


@api.exception_handler(idempotency.KeyReused)
def _key_reused(request, exc):
    return _error(
        request,
        422,
        "idempotency_key_reused",
        "This Idempotency-Key was used with another request body; use a new key for a new request.",
    )


@api.exception_handler(idempotency.InProgress)
def _in_progress(request, exc):
    response = _error(
        request,
        409,
        "idempotency_in_progress",
        "A request with this Idempotency-Key is still being processed; retry after the time in Retry-After.",
    )
    response["Retry-After"] = str(exc.retry_after)
    return response


_ANSWERS = {"hooks/post": PostOut, "hooks/tool": EventOut, "hooks/error": EventOut}


# --- Endpoints -------------------------------------------------------------------------------------

ERRORS = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,
    422: ErrorOut,
    503: ErrorOut,
}
IDEMPOTENT = (
    "Send an Idempotency-Key header (any visible ASCII, up to 200 characters, new "
    "for each request) to make retries safe: the same key and body again returns "
    "the first answer and writes nothing; the same key with another body is a 422."
)


def _attempt(view):
    """An idempotent request's attempt: its lease is kept while it runs, and one that fails
    before answering lets a retry with its key take over at once."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        failed = True
        try:
            answer = view(request, *args, **kwargs)
            failed = False
            return answer
        finally:
            idempotency.let_go(getattr(request, "idempotency_record", None), failed=failed)

    return wrapper


def _idempotent(request, endpoint: str, fingerprint: bytes | None = None):
    """The request's idempotency record, or the stored answer to replay (None, None without
    the header). `fingerprint`: what identifies the request, when not its bytes."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None, None
    if not idempotency.valid_key(key):
        raise HttpError(400, "Idempotency-Key must be 1 to 200 visible ASCII characters.")
    record, replay = idempotency.begin(
        agent=request.auth.agent,
        key=key,
        endpoint=endpoint,
        body=request.body if fingerprint is None else fingerprint,
        also=() if fingerprint is None else (request.body,),
    )
    if replay:  # the stored answer, serialized by the same schema as the first time
        body = _ANSWERS[endpoint].model_validate(record.response).model_dump(mode="json")
        response = api.create_response(request, body, status=record.status_code)
        response["Idempotent-Replayed"] = "true"
        return record, response
    request.idempotency_record = record
    idempotency.hold(record)
    return record, None


def _session(request, session_id: uuid.UUID) -> AgentSession:
    agent = request.auth.agent
    session = (
        AgentSession.objects.select_related("agent", "agent__project", "user")
        .filter(pk=session_id, agent=agent)
        .first()
    )
    if session is None:  # another agent's or another project's session: not there for you
        raise Http404("No such session for this agent.")
    logs.bind(session=session.pk)
    return session


@api.post(
    "/hooks/pre",
    response={200: PreOut, **ERRORS},
    summary="Assemble the prompt",
    description="An Idempotency-Key header (optional, 1 to 200 visible ASCII characters, "
    "new for each run) makes a retry safe: the same key again gets the same "
    "session and prompt (Idempotent-Replayed: true), not a second session; "
    "409 answer_lost when that prompt can no longer be read back.",
)
def pre(request, body: PreIn):
    agent = request.auth.agent
    user = _member(agent.project, body.user) if body.user else None
    key = request.headers.get("Idempotency-Key") or ""
    if key and not idempotency.valid_key(key):
        raise HttpError(400, "Idempotency-Key must be 1 to 200 visible ASCII characters.")
    session, assembly = prehook.hook_pre(
        agent=agent, user=user, external_ref=body.session or "", request_key=key
    )
    logs.bind(session=session.pk)
    if assembly is None:  # a retry of a pre hook whose answer was lost: the same session
        return _recorded_answer(request, session)
    return _pre_answer(session, assembly.prompt)


def _recorded_answer(request, session: AgentSession):
    """The answer a pre hook gave, again: its session, its receipt and the exact prompt kept
    under its sha256. When that prompt cannot be read back (not kept, erased, expired, or
    storage down) the retry is told so and opens nothing: 409 answer_lost."""
    prompt = None
    if session.prompt_stored and not session.prompt_removed:
        try:
            prompt = receipts.prompt_read(project=session.agent.project, sha256=session.prompt_sha256)
        except errors.StorageUnavailable:
            prompt = None
    if prompt is None:
        return _error(
            request,
            409,
            "answer_lost",
            "This pre hook was answered before (session %s), and its prompt cannot be "
            "read back now; call the pre hook again with a new Idempotency-Key." % session.pk,
        )
    response = _pre_answer(session, prompt)
    response["Idempotent-Replayed"] = "true"
    return response


def _pre_answer(session: AgentSession, prompt: str) -> JsonResponse:
    """A pre hook's answer, from its session row (the receipt records what was assembled) and
    the prompt's bytes: the same for the first answer and for a retry's. Built from values the
    server made and sent as they are (PreOut documents them; validating them again on the way
    out cost about a millisecond a hook)."""
    sections = []
    for section in session.receipt:
        files = section["files"]
        single = files[0] if len(files) == 1 else None
        sections.append(
            {
                "tag": section["tag"],
                "source": section["source"],
                "path": single["path"] if single else None,
                "revision": single["revision"] if single else None,
                "files": [{"path": f["path"], "revision": f["revision"]} for f in files],
                "tokens": section["tokens"],
                "truncated": section["truncated"],
                # Receipts from before fences: the trust the source has by default.
                "trust": section.get("trust") or _trust_by_source(section["source"]),
                "origin": section.get("origin") or [],
            }
        )
    return JsonResponse(
        {
            "session": str(session.pk),
            "prompt": prompt,
            "prompt_sha256": session.prompt_sha256,
            "sections": sections,
            "total_tokens": session.total_tokens,
            "budget": session.budget,
            "tokenizer": session.tokenizer,
            "bucket_checked": bool(session.bucket_checked),
        }
    )


def _trust_by_source(source: str) -> str:
    return injection.section_trust(injection.SectionSpec("", source))


def _member(project, username: str):
    """The project's member with this username (404 for anyone else), without a query on the
    warm path: who was found is cached under the project's member version, which moves with
    every membership change (models._members_changed), so a removal is never served stale."""
    key = f"mgc:member:{project.pk}:{project.members_version}:{username}"
    found = cache.get(key)
    if found is None:
        user = get_user_model().objects.filter(username=username, memberships__project=project).first()
        if user is None:
            raise Http404("No such user in this agent's project.")
        found = user.pk
        cache.set(key, found, timeout=3600)
    user = get_user_model()(pk=found, username=username)
    user._state.adding, user._state.db = False, "default"  # a row that exists, not a new one
    return user


@api.post(
    "/hooks/post", response={200: PostOut, **ERRORS}, summary="Write results back", description=IDEMPOTENT
)
@_attempt
def post(request, body: PostIn):
    session = _session(request, body.session)
    record, replay = _idempotent(request, "hooks/post", _post_fingerprint(body))
    if replay is not None:
        return replay
    writes = [
        hooks.WriteRequest(
            w.path, w.mode, getattr(w, "content", ""), w.base_revision, getattr(w, "new_path", None)
        )
        for w in body.writes
    ]
    results = hooks.hook_post(
        session=session, writes=writes, summary=body.summary or "", record=record, end=body.end
    )
    return Status(200, {"session": session.pk, "results": results})


def _post_fingerprint(body: PostIn) -> bytes:
    """A post as what it does: its session, writes and whether it ends the session. The
    summary is a label (a revision's message); the same writes under the same key with another
    summary are the same request, answered with the first answer (Claude Code's Stop, then
    SessionEnd, end one session with two summaries and, when nothing changed, one key)."""
    what = body.model_dump(mode="json", exclude={"summary"}, exclude_unset=False)
    return json.dumps(what, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@api.post(
    "/hooks/tool", response={200: EventOut, **ERRORS}, summary="Record a tool call", description=IDEMPOTENT
)
@_attempt
def tool(request, body: ToolIn):
    return _event(
        request, body.session, "tool", {"name": body.name, "summary": body.summary or ""}, body.details
    )


@api.post(
    "/hooks/error", response={200: EventOut, **ERRORS}, summary="Record an error", description=IDEMPOTENT
)
@_attempt
def error(request, body: ErrorIn):
    return _event(request, body.session, "error", {"message": body.message}, body.details)


def _event(request, session_id: uuid.UUID, kind: str, payload: dict, details: dict | None):
    session = _session(request, session_id)
    record, replay = _idempotent(request, f"hooks/{kind}")
    if replay is not None:
        return replay
    outcome = hooks.hook_event(
        session=session, kind=kind, record=record, payload={**payload, "details": storable(details or {})}
    )
    return Status(200, outcome)


@api.post(
    "/sandbox/files", response={200: SandboxOut, **ERRORS}, summary="Files of a session, for a sandbox folder"
)
def sandbox_files(request, body: SandboxIn):
    session = _session(request, body.session)
    files = reads.sandbox_files(session=session)
    project = session.agent.project
    return Status(
        200,
        {
            "session": session.pk,
            "agent": session.agent_id,
            "files": files,
            "storage": {
                "bucket": project.bucket_name,
                "prefix": project.prefix,
                "workspace_prefix": layout.workspace_prefix(project.prefix),
            },
        },
    )


@api.post("/files/list", response={200: FilesOut, **ERRORS}, summary="The memory files a session may read")
def files_list(request, body: FilesIn):
    session = _session(request, body.session)
    files, truncated = reads.files_list(session=session)
    return Status(200, {"session": session.pk, "files": files, "truncated": truncated})


@api.post("/files/read", response={200: ReadOut, **ERRORS}, summary="One memory file as it stands now")
def files_read(request, body: ReadIn):
    session = _session(request, body.session)
    return Status(200, {"session": session.pk, **reads.file_current(session=session, path=body.path)})
