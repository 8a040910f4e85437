"""The runner API's lane through the middleware (projects.middleware.ApiLaneMiddleware): a
hook's answer carries nothing of the console's session, CSRF token or language, and keeps
the security headers, no-store, its request id and the JSON error shape; the console's own
pages keep all of their middleware."""

import json

import pytest
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import include, path
from django.utils import translation

from projects.middleware import ApiLaneMiddleware

pytestmark = pytest.mark.django_db


def _boom(request):
    raise RuntimeError("a bug under the API root")


# For the 500 test (pytest.mark.urls): a view under the API root that fails, then the console.
urlpatterns = [path("api/v1/boom", _boom), path("", include("memoryadmin.urls"))]

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def _pre(client, token, **extra):
    return client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": "maria"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        **extra,
    )


def _guarded(response) -> None:
    """What every runner API answer carries, error or not."""
    for header, value in SECURITY_HEADERS.items():
        assert response.get(header) == value, (header, response.headers)
    assert "no-store" in response.get("Cache-Control", ""), response.headers
    assert response.get("X-Request-ID")
    assert not response.cookies, response.cookies
    assert "Vary" not in response and "Content-Language" not in response, response.headers


def test_a_hook_answer_carries_no_console_state(s3, project, agent, person, token):
    """Even from a browser signed in to the console, in Russian, with a CSRF cookie: no
    session, no cookie set, nothing varies by cookie or language."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(person)
    client.cookies["csrftoken"] = "x" * 32
    response = _pre(client, token, HTTP_ACCEPT_LANGUAGE="ru")
    assert response.status_code == 200, response.content
    _guarded(response)
    assert response["X-Frame-Options"] == "DENY" and response.get("Content-Security-Policy")
    assert int(response["Content-Length"]) == len(response.content)  # CommonMiddleware's
    assert response.json()["session"]


@pytest.mark.parametrize(
    ("method", "url", "status", "code"),
    [
        ("post", "/api/v1/nope", 404, "not_found"),
        ("get", "/api/v1/hooks/pre", 405, "method_not_allowed"),
        ("post", "/api/v1/hooks/pre", 401, "unauthorized"),
    ],
)
def test_api_errors_are_json_guarded_and_not_kept(client, method, url, status, code):
    response = getattr(client, method)(url, HTTP_ACCEPT_LANGUAGE="ru")
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    _guarded(response)


def test_an_oversize_body_is_a_json_413_not_kept(client, token, settings):
    settings.MGC_API_MAX_BODY_BYTES = 100
    response = client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": "x" * 200}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"
    _guarded(response)


@pytest.mark.urls(__name__)
def test_a_failing_view_under_the_api_is_a_json_500_not_kept():
    response = Client(raise_request_exception=False).post(
        "/api/v1/boom", "{}", content_type="application/json"
    )
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"
    _guarded(response)


def test_api_messages_are_in_the_default_language_whatever_the_thread_served(
    s3, workspace_file, agent, token
):
    """A worker thread's last console page was in Russian (LocaleMiddleware leaves its
    language active): a hook's message is still in LANGUAGE_CODE."""
    cache.clear()
    s3.proxy.down = True
    translation.activate("ru")
    response = _pre(Client(), token)
    assert response.status_code == 503
    assert response.json()["error"]["message"].startswith("The memory storage (S3) did not answer")


def test_console_pages_keep_their_session_csrf_and_language(client, person):
    page = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="ru")
    assert page.status_code == 200
    assert "csrftoken" in page.cookies
    assert page["Content-Language"] == "ru"
    assert {"Cookie", "Accept-Language"} <= {v.strip() for v in page["Vary"].split(",")}
    strict = Client(enforce_csrf_checks=True)
    refused = strict.post("/accounts/login/", {"username": "maria", "password": "x"})
    assert refused.status_code == 403  # no CSRF token: the console still checks
    client.force_login(person)
    dashboard = client.get("/")
    assert dashboard.status_code == 200 and dashboard.wsgi_request.user == person


def test_console_only_middleware_must_be_in_the_chain_after_the_lane(settings):
    settings.CONSOLE_ONLY_MIDDLEWARE = [*settings.CONSOLE_ONLY_MIDDLEWARE, "projects.middleware.Nowhere"]
    with pytest.raises(ImproperlyConfigured, match="Nowhere"):
        ApiLaneMiddleware(lambda request: None)
