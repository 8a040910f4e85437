"""A second look at this round's own fixes: what they broke or left half done. A manifest
saved under the looser rules must still serve; a policy key typed in NFD must still govern;
a runner's S3 credentials must not write where the policy wants approval; a forged Host is a
400; an erasure scrubs unfinished answers; "Add member" refuses an ambiguous name."""

import html
import re
import unicodedata

import pytest
from django.test import override_settings
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import Agent, Membership
from projects.runners import schemas
from projects.runners.policy import policy_rule

pytestmark = pytest.mark.django_db

NFD = unicodedata.normalize("NFD", "café")
NFC = unicodedata.normalize("NFC", "café")


@override_settings(DEBUG=False, ALLOWED_HOSTS=["console.example"])
def test_post_with_a_foreign_host_is_a_400_not_a_500(client):
    client.raise_request_exception = False
    response = client.post("/accounts/login/", {"username": "x"}, HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert "<h1>Bad request</h1>" in response.content.decode()  # the console's page, not a 500


def test_a_policy_rule_typed_in_nfd_still_governs_its_files(agent):
    policy = {
        "post": {
            "workspace/**.md": {"modes": ["append", "replace"], "approval": False},
            f"workspace/{NFD}/*.md": {"modes": ["append", "replace"], "approval": True},
        }
    }
    agent.hook_policy = schemas.policy(policy).stored()
    agent.save()
    rule = policy_rule(Agent.objects.get(pk=agent.pk), f"workspace/{NFC}/menu.md")
    assert rule == {"modes": ["append", "replace"], "approval": True}


def test_add_member_refuses_an_ambiguous_case_insensitive_name(client, admin, project, make_user):
    make_user("NINA")
    make_user("Nina")
    client.force_login(admin)
    client.post(reverse("projects:members", args=[project.slug]), {"username": "nina", "role": "employee"})
    assert not Membership.objects.filter(project=project, user__username__iexact="nina").exists()


def test_erasure_scrubs_an_unfinished_post_records_partial_answer(client, s3, project, agent, person, admin):
    import json as _json

    from projects.audit import Actor
    from projects.governance import erasure
    from projects.memory import store
    from projects.models import IdempotencyRecord
    from projects.runners import bearer

    secret = "secret-health-fact"
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content=secret + "\n",
        actor=Actor.system("t"),
    )
    agent.hook_policy = {"post": {"USER.md": {"modes": ["replace"], "approval": False}}}
    agent.save()
    _, token = bearer.token_create(agent=agent, name="t", created_by=admin)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    session = client.post(
        "/api/v1/hooks/pre", _json.dumps({"user": person.username}), content_type="application/json", **auth
    ).json()
    client.post(
        "/api/v1/hooks/post",
        _json.dumps(
            {
                "session": session["session"],
                "writes": [{"path": "USER.md", "mode": "replace", "content": "x\n", "base_revision": 0}],
            }
        ),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k1",
        **auth,
    )
    # As if the request had died after noting its first write (hook_post notes each write
    # in its own transaction; finish() comes last).
    IdempotencyRecord.objects.filter(key="k1").update(response=None, state="running")
    erasure.profile_erase(by=admin, user=person, reason="GDPR", projects=[project])
    assert not [r.pk for r in IdempotencyRecord.objects.all() if secret in str(r.partial)]


def test_runner_credentials_cannot_write_where_the_policy_wants_approval(agent):
    import fnmatch

    from projects.memory import layout
    from projects.runners import credentials

    agent.hook_policy = schemas.policy(
        {
            "post": {
                "workspace/**.md": {"modes": ["replace"], "approval": False},
                "workspace/secret/*.md": {"modes": ["replace"], "approval": True},
            }
        }
    ).stored()
    agent.save()
    assert policy_rule(agent, "workspace/secret/x.md")["approval"] is True
    key = layout.workspace_prefix(agent.project.prefix) + "secret/x.md"
    document = credentials.runner_policy(agent)
    allowed = any(
        s["Effect"] == "Allow"
        and "s3:PutObject" in s["Action"]
        and any(
            fnmatch.fnmatchcase(f"arn:aws:s3:::{agent.project.bucket_name}/{key}", r)
            for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])
        )
        for s in document["Statement"]
    )
    denied = any(s["Effect"] == "Deny" for s in document["Statement"])
    assert not allowed or denied


OLD_MANIFEST = {
    "sections": [{"tag": "workspace_memory", "source": "workspace/.archive/*.md"}],
    "total_tokens": 10**12,
}  # both refused when saving today


def test_a_manifest_saved_before_the_stricter_globs_still_previews(client, s3, admin, agent, project):
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You are calm.\n",
        actor=Actor.system("t"),
    )
    Agent.objects.filter(pk=agent.pk).update(manifest=OLD_MANIFEST)
    client.force_login(admin)
    client.raise_request_exception = False
    response = client.post(
        reverse("projects:agent_settings", args=[project.slug, agent.slug]),
        {
            "which": "manifest",
            "preview": "1",
            "preview_user": "",
            "manifest-sections-TOTAL_FORMS": "1",
            "manifest-sections-INITIAL_FORMS": "0",
            "manifest-sections-0-tag": "agent_identity",
            "manifest-sections-0-source": "SOUL.md",
            "manifest-sections-0-ORDER": "1",
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Preview: not saved" in page
    prompt = re.search(r'<pre class="raw prompt" id="preview-prompt">(.*?)</pre>', page, re.S)[1]
    assert html.unescape(prompt).endswith("\n\n<agent_identity>\nYou are calm.\n</agent_identity>")
    # The saved manifest was assembled too (its archive glob matches nothing): a count and a
    # diff, not the dash of a manifest that no longer builds.
    assert "(saved manifest: 0)" in page and '<table class="diff split">' in page


def test_a_manifest_saved_before_the_stricter_globs_still_serves_the_pre_hook(client, s3, agent, token):
    import json as _json

    Agent.objects.filter(pk=agent.pk).update(manifest=OLD_MANIFEST)
    client.raise_request_exception = False
    response = client.post(
        "/api/v1/hooks/pre",
        _json.dumps({}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    answer = response.json()
    assert [(s["tag"], s["source"], s["files"]) for s in answer["sections"]] == [
        ("workspace_memory", "workspace/.archive/*.md", [])
    ]
    assert (answer["prompt"], answer["total_tokens"]) == ("", 0)
    assert answer["budget"] == 10_000_000  # its budget of 10**12 is held to the largest one
