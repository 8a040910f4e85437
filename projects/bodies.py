"""Request bodies sent chunked (`Transfer-Encoding: chunked`, no Content-Length): read within
the same limit as any other, or refused with a status that says why.

Django reads a body by its Content-Length only, so without one it reads nothing: a runner's
chunked post hook reached the view as an empty body and was answered 422 "field required".
This wraps the WSGI application (memoryadmin/wsgi.py), before Django builds the request:

- the server decoded the chunks and marks the end of the body (`wsgi.input_terminated`, as
  gunicorn does): the body is read, up to the limit and one byte more, and handed on with its
  Content-Length; over the limit it is a 413, as a body that declared its length would be;
- the server gives no such mark (Django's runserver, wsgiref): a read could not tell the end
  of the body from a stalled client, so the answer is 411 Length Required.

Under the runner API the limit is MGC_API_MAX_BODY_BYTES and refusals are its JSON errors;
elsewhere the limit is DATA_UPLOAD_MAX_MEMORY_SIZE (no browser sends a form chunked)."""

from __future__ import annotations

import io
import json

from django.conf import settings

from projects.errors import error_body

_API_PREFIX = "/api/"


class ChunkedBodies:
    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked or environ.get("CONTENT_LENGTH"):
            return self.application(environ, start_response)
        api = environ.get("PATH_INFO", "").startswith(_API_PREFIX)
        limit = settings.MGC_API_MAX_BODY_BYTES if api else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if not environ.get("wsgi.input_terminated"):
            return _refuse(
                start_response,
                api,
                411,
                "length_required",
                "This server cannot read a chunked request body (Transfer-Encoding: chunked): "
                "send a Content-Length.",
            )
        body = environ["wsgi.input"].read(limit + 1)
        if len(body) > limit:
            return _refuse(
                start_response, api, 413, "body_too_large", f"Request bodies are limited to {limit:,} bytes."
            )
        environ = {**environ, "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
        del environ["HTTP_TRANSFER_ENCODING"]
        return self.application(environ, start_response)


def _refuse(start_response, api: bool, status: int, code: str, message: str):
    if api:
        payload, kind = json.dumps(error_body(code, message)).encode(), "application/json"
    else:
        payload, kind = message.encode(), "text/plain; charset=utf-8"
    reason = {411: "Length Required", 413: "Content Too Large"}[status]
    start_response(
        f"{status} {reason}",
        [("Content-Type", kind), ("Content-Length", str(len(payload))), ("Cache-Control", "no-store")],
    )
    return [payload]
