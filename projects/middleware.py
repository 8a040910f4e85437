"""Request guards for the runner API: they act before a view parses anything, and after
anything (Django's own 404 and 405 pages included) has answered. First of all, the request's
context: its id, its log line, its hook's timing, and the probes (`RequestContextMiddleware`)."""

import itertools
import logging
import os
import re
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.core.exceptions import (
    BadRequest,
    DisallowedHost,
    ImproperlyConfigured,
    MiddlewareNotUsed,
    RequestDataTooBig,
    TooManyFieldsSent,
)
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import Http404, JsonResponse
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils import translation
from django.utils.cache import add_never_cache_headers
from django.utils.module_loading import import_string
from django.views.defaults import bad_request, page_not_found

from projects import health, logs, metrics
from projects.audit import Actor, audit_record
from projects.errors import error_body
from projects.governance import signin
from projects.runners.api import API_ROOT
from projects.views import signin as signin_views
from projects.views.probes import PROBES

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    500: "server_error",
    503: "unavailable",
}
_MESSAGES = {
    404: "No such endpoint. The runner API is described at /api/v1/openapi.json.",
    405: "This endpoint does not take that method.",
    500: "The console failed on this request; it was logged. Nothing about its outcome is known.",
}


def is_api(request) -> bool:
    return request.path.startswith(f"/{API_ROOT}")


def api_error(status: int, code: str, message: str, **extra) -> JsonResponse:
    """A runner API error in its JSON shape, not to be kept by any cache: the body limit's
    413 and the JSON errors' 404, 405 and 500 are made outside NoStoreMiddleware."""
    response = JsonResponse(error_body(code, message, **extra), status=status)
    add_never_cache_headers(response)
    return response


class ApiLaneMiddleware:
    """The runner API's own way through the middleware. A hook authenticates by its bearer
    token and answers JSON: it has no use for the console's session, CSRF token, language,
    messages, signed-in person, provider re-check or draft recovery, and running them cost
    every hook their CPU. Everything in MIDDLEWARE before this one runs for every request
    (the request's context, the security headers, the sign-in door, the JSON errors, the body
    limit). After it, a request under the API root goes through the rest of MIDDLEWARE without
    settings.CONSOLE_ONLY_MIDDLEWARE (CommonMiddleware's host check and Content-Length,
    X-Frame-Options, the CSP header, no-store) to its view; any other request goes on through
    all of it, as before. The lane is a chain built as Django builds its own (same order,
    each middleware wrapped so that an exception becomes a response, the view called by
    Django's `_get_response` with the lane's own view and exception hooks only), so the test
    client takes it too. Its messages are in LANGUAGE_CODE, whatever the thread last served."""

    def __init__(self, get_response):
        self.get_response = get_response
        name = f"{__name__}.{type(self).__name__}"
        after = settings.MIDDLEWARE[settings.MIDDLEWARE.index(name) + 1 :]
        skipped = set(settings.CONSOLE_ONLY_MIDDLEWARE)
        if not skipped <= set(after):
            raise ImproperlyConfigured(
                f"CONSOLE_ONLY_MIDDLEWARE names what is not in MIDDLEWARE after {name}: "
                + ", ".join(sorted(skipped - set(after)))
            )
        self.lane = _Lane([path for path in after if path not in skipped])

    def __call__(self, request):
        if is_api(request):
            translation.deactivate()  # LANGUAGE_CODE, not the last console page's language
            return self.lane.chain(request)
        return self.get_response(request)


class _Lane(BaseHandler):
    """A middleware chain of its own ending in Django's view call (URL resolution, view
    hooks, ATOMIC_REQUESTS, the answer's checks): BaseHandler.load_middleware's, for
    synchronous middleware, from a list of paths instead of settings.MIDDLEWARE."""

    def __init__(self, paths: list[str]):
        self._view_middleware, self._template_response_middleware, self._exception_middleware = [], [], []
        handler = convert_exception_to_response(self._get_response)
        for path in reversed(paths):
            try:
                middleware = import_string(path)(handler)
            except MiddlewareNotUsed:
                continue
            if hasattr(middleware, "process_view"):
                self._view_middleware.insert(0, middleware.process_view)
            if hasattr(middleware, "process_template_response"):
                self._template_response_middleware.append(middleware.process_template_response)
            if hasattr(middleware, "process_exception"):
                self._exception_middleware.append(middleware.process_exception)
            handler = convert_exception_to_response(middleware)
        self.chain = handler


class ApiBodyLimitMiddleware:
    """Refuse oversize runner API bodies with a JSON 413 before they are read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api(request):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > settings.MGC_API_MAX_BODY_BYTES:
                return api_error(
                    413,
                    "body_too_large" if length > 0 else "bad_length",
                    f"Request bodies are limited to {settings.MGC_API_MAX_BODY_BYTES:,} bytes.",
                )
        return self.get_response(request)


class ApiJsonErrorsMiddleware:
    """Under the API root every error is JSON {"error": {"code", "message"}}: a wrong method,
    an unknown path or a server error answered by Django in HTML is turned into that shape
    (status and Allow header kept)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            not is_api(request)
            or response.status_code < 400
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        status = response.status_code
        converted = api_error(
            status,
            _CODES.get(status, f"http_{status}"),
            _MESSAGES.get(status, response.reason_phrase or "Error."),
        )
        if response.has_header("Allow"):
            converted["Allow"] = response["Allow"]
        return converted


class ConsoleNotFoundMiddleware:
    """The console's own 404 page also in debug mode (the demo runs in it): Django's debug page
    would list the URL patterns and say why the object was not found, so a page hidden from
    someone would read differently from one that does not exist."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and not is_api(request)
            and not response.streaming
            and _DEBUG_PAGE_MARK in response.content
        ):
            response = page_not_found(request, Http404())
        return response


_DEBUG_PAGE_MARK = b'<meta name="robots" content="NONE,NOARCHIVE">'  # Django's debug pages only


class NulCharacterMiddleware:
    """A NUL character (`%00`) in a console page's query string is refused with a 400 before
    any view sees it: PostgreSQL cannot store one in text or JSON (a search query goes into
    the audit trail), so it would end as a 500 there. Forms posted are left to their fields,
    which refuse NUL with a message and keep what was typed (Django's CharField does; the
    few values views read raw are cleaned where they are read). The runner API has its own
    checks (`Text`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api(request) and _holds_nul(request.GET):
            return bad_request(request, ValueError("NUL character in the query string"))
        return self.get_response(request)


def _holds_nul(data) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in data.lists())


class SessionEndedMiddleware:
    """A form sent after the person's session ended (it expired, or they logged out in another
    tab) is sent on to the login page by login_required, and its body is gone. Then the login
    page says so (`ended=1`), and after logging in the person comes back to the page the form
    was on (a same-site Referer), not to the URL it posted to (which may take POST only). What
    they typed is still in their browser (static/js/drafts.js) and is offered back there."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            request.method != "POST"
            or response.status_code != 302
            or is_api(request)
            or request.user.is_authenticated
        ):
            return response
        login = resolve_url(settings.LOGIN_URL)
        location = urlsplit(response["Location"])
        # login_required's redirect names the page to come back to; others (the language
        # switch on the login page) do not.
        if location.path != login or "next" not in parse_qs(location.query) or request.path == login:
            return response
        referer = urlsplit(request.META.get("HTTP_REFERER", ""))
        back = request.path
        try:
            host = request.get_host()
        except DisallowedHost:
            host = None
        if host and referer.netloc == host and referer.path.startswith("/"):
            back = referer.path + (f"?{referer.query}" if referer.query else "")
        response["Location"] = f"{login}?{urlencode({'next': back, 'ended': '1'})}"
        return response


class EndedAccountMiddleware:
    """A session whose account can no longer be used (deactivated or deleted by the directory,
    SCIM, or by an admin) is ended at its next request: flushed, not merely read as anonymous,
    and the end audited once (session.ended)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api(request) and not request.user.is_authenticated and SESSION_KEY in request.session:
            user_id = request.session.get(SESSION_KEY)
            request.session.flush()
            audit_record(
                actor=Actor.system("sign-in"),
                action="session.ended",
                details={"user_id": user_id, "reason": "account_unusable"},
            )
        return self.get_response(request)


class NoStoreMiddleware:
    """Nothing a signed-in person sees, and no runner API answer, is kept by a browser or a
    proxy cache: memory, profiles and prompts are personal data. Answers that already say how
    to cache (a view's own no-store) are left as they are; static files are not touched (they
    are served before this, or by the proxy)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if not response.has_header("Cache-Control") and (
            is_api(request) or (user is not None and user.is_authenticated)
        ):
            add_never_cache_headers(response)
        return response


class SignInDoorMiddleware:
    """A sign-in the console already knows to refuse (a locked account on this client, a
    paused address, a slowed account's turn taken: projects.governance.signin, from the cache)
    is answered 429 here, first thing after the request's context (RequestContextMiddleware:
    its id, its log line): no session, no CSRF check, no query, no template, and counted in
    mgc_signin_refusals_total by its kind. A flood then costs next to nothing, and the runner
    API keeps its CPU."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.login_paths = None

    def __call__(self, request):
        if request.method == "POST":
            if self.login_paths is None:
                self.login_paths = {resolve_url(settings.LOGIN_URL), reverse("admin:login")}
            if request.path in self.login_paths:
                try:
                    refusal = signin.door_refusal(request)
                except (BadRequest, RequestDataTooBig, TooManyFieldsSent):
                    refusal = None  # the form's own checks answer it
                if refusal is not None:
                    metrics.signin_refused(refusal.kind)
                    return signin_views.refusal_response(request, refusal)
        return self.get_response(request)


_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
# Ids made here: a random prefix per process and a counter, unique without a system call per
# request (uuid4 reads the kernel's random source each time: about 5 us).
_ID_PREFIX = secrets.token_hex(6)
_id_counter = itertools.count(1)


def _new_id_prefix() -> None:  # a forked worker (gunicorn --preload) gets its own
    global _ID_PREFIX
    _ID_PREFIX = secrets.token_hex(6)


os.register_at_fork(after_in_child=_new_id_prefix)
_requests = logging.getLogger("mgc.request")


def _hook_children() -> dict:
    """Each hook path's histogram and answer counters, resolved once (a child's lookup takes a
    lock; the hot path should not)."""
    return {path: (metrics.hook_seconds.labels(hook), {}, hook) for path, hook in metrics.HOOK_PATHS.items()}


class RequestContextMiddleware:
    """First in the stack. Probes (/healthz, /readyz, /metrics: `views.probes`) are answered
    here and nothing else runs for them. Every other request gets an id: the `X-Request-ID` a
    trusted proxy set (MGC_TRUSTED_PROXIES above 0: nginx's `proxy_set_header X-Request-ID
    $request_id` replaces whatever the client sent), else one made here; it is on every log
    line written while the request runs (projects.logs) and in the answer's `X-Request-ID`.
    A runner hook's time is observed in its histogram, and one line per request is logged
    (`mgc.request`: method, path, status, milliseconds; never a query string or a body)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.hooks = _hook_children()

    def __call__(self, request):
        probe = PROBES.get(request.path_info)
        if probe is not None:
            response = probe(request)
            response._has_been_logged = True  # a 503 every few seconds is the probe's answer, not news
            return response
        started = time.perf_counter()
        health.connection_checked()
        sent = request.META.get("HTTP_X_REQUEST_ID", "")
        if sent and settings.MGC_TRUSTED_PROXIES > 0 and _REQUEST_ID.match(sent):
            request_id = sent
        else:
            request_id = f"{_ID_PREFIX}{next(_id_counter):08x}"
        request.request_id = request_id
        token = logs.begin(request_id, request)
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            elapsed = time.perf_counter() - started
            hook = self.hooks.get(request.path_info)
            if hook is not None:
                histogram, answers, name = hook
                status = f"{response.status_code // 100}xx"
                counter = answers.get(status)
                if counter is None:
                    counter = answers[status] = metrics.hook_answers.labels(name, status)
                histogram.observe(elapsed)
                counter.inc()
            if settings.MGC_LOG_REQUESTS and _requests.isEnabledFor(logging.INFO):
                _requests.info(
                    "%s %s %s",
                    request.method,
                    request.path,
                    response.status_code,
                    extra={"fields": {"status": response.status_code, "ms": round(elapsed * 1000, 1)}},
                )
            return response
        finally:
            logs.end(token)
