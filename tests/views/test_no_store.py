"""Memory is personal data: nothing a signed-in person sees, no download of it and no runner API
answer may be kept by a browser or a proxy cache. The OpenAPI schema says what the API
accepts, and the console shows only a few characters of each token."""

import json
import re

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import AgentToken
from projects.runners import bearer

pytestmark = pytest.mark.django_db


def _no_store(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


def test_pages_downloads_and_api_answers_are_not_cached(client, s3, project, agent, person, token):
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    client.force_login(person)
    file = profile.file
    urls = [
        reverse("projects:dashboard"),
        reverse("projects:file_detail", args=[project.slug, file.pk]),
        reverse("projects:revision_raw", args=[project.slug, file.pk, 1]),
        reverse("projects:simulate", args=[project.slug]),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert _no_store(response) and "private" in response["Cache-Control"], url
    client.logout()
    pre = client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": "maria"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert pre.status_code == 200 and _no_store(pre)
    refused = client.post("/api/v1/hooks/pre", "{}", content_type="application/json")
    assert refused.status_code == 401 and _no_store(refused)


def test_the_openapi_schema_says_text_fields_hold_no_nul(client, token):
    schema = client.get("/api/v1/openapi.json").json()
    text_fields = [
        (name, spec)
        for model_name, model in schema["components"]["schemas"].items()
        if model_name.endswith("In")  # what the API takes, not what it answers
        for name, spec in model.get("properties", {}).items()
        if name in ("path", "summary", "name", "message", "user")
    ]
    assert {name for name, _ in text_fields} == {"path", "summary", "name", "message", "user"}
    for name, spec in text_fields:
        options = spec.get("anyOf", [spec])
        patterns = [o.get("pattern") for o in options if o.get("type") == "string"]
        assert patterns and all(
            p and re.fullmatch(p, "plain text") and not re.fullmatch(p, "a\x00b") for p in patterns
        ), (name, spec)


def test_only_a_few_characters_of_a_token_are_kept_and_shown(client, agent, admin):
    token, raw = bearer.token_create(agent=agent, name="prod runner", created_by=admin)
    assert token.prefix == raw[:8] and len(token.prefix) == 8
    old = AgentToken.objects.create(
        agent=agent, name="old runner", prefix="mgc_ABCDEFGH", token_hash="0" * 64
    )
    client.force_login(admin)
    page = client.get(reverse("projects:agent_settings", args=[agent.project.slug, agent.slug]))
    text = page.content.decode()
    assert f"<code>{raw[:8]}…</code>" in text and raw[:9] not in text
    assert "<code>mgc_ABCD…</code>" in text and old.prefix not in text
