"""The permission matrix: every console URL and every runner API endpoint, for every role,
for a member of another project and for an anonymous visitor.

Denied means 404, never 403: the answer must not tell that the object exists. A URL added to
projects/urls.py without a row here fails test_every_url_has_a_row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.urls import get_resolver, reverse

from projects.audit import Actor
from projects.governance import review
from projects.memory import records, removal, store
from projects.models import (
    Agent,
    AgentSession,
    BackgroundJob,
    LegalHold,
    Membership,
    PoisonScan,
    Proposal,
    RefusedWrite,
    SubjectDocument,
    SubjectRequest,
    WebhookSubscription,
)
from projects.runners import bearer

pytestmark = pytest.mark.django_db

ADMIN, COMPLIANCE, EMPLOYEE, OUTSIDER = "admin", "compliance", "employee", "outsider"
ALL = {ADMIN, COMPLIANCE, EMPLOYEE}
REVIEW = {ADMIN, COMPLIANCE}
MANAGE = {ADMIN}
OWNER = {ADMIN, EMPLOYEE}  # admin, and the employee whose own profile it is


@dataclass
class World:
    project: object
    other: object
    people: dict
    ids: dict


@pytest.fixture
def world(s3, make_project, make_user) -> World:
    project = make_project(slug="incidents", name="Incidents")
    other = make_project(slug="tenders", name="Tenders")
    people = {
        role: make_user(name)
        for role, name in [(ADMIN, "olga"), (COMPLIANCE, "rita"), (EMPLOYEE, "maria"), (OUTSIDER, "oscar")]
    }
    for role in (ADMIN, COMPLIANCE, EMPLOYEE):
        Membership.objects.create(user=people[role], project=project, role=role)
    ivan = make_user("ivan")
    Membership.objects.create(user=ivan, project=project, role=EMPLOYEE)
    # The outsider is an admin elsewhere: privileged, but not here.
    Membership.objects.create(user=people[OUTSIDER], project=other, role=ADMIN)
    agent = Agent.objects.create(project=project, slug="analyst", name="Analyst")
    Agent.objects.create(project=other, slug="writer", name="Writer")
    system = Actor.system("matrix")
    soul = store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="calm\n", actor=system
    )
    mine = store.file_create(
        project=project,
        scope="user",
        user=people[EMPLOYEE],
        path="USER.md",
        content="maria\n",
        actor=Actor.person(people[EMPLOYEE]),
    )
    store.file_save(
        file=mine.file, content="maria 2\n", actor=Actor.person(people[EMPLOYEE]), base_revision=1
    )
    theirs = store.file_create(
        project=project, scope="user", user=ivan, path="USER.md", content="ivan\n", actor=Actor.person(ivan)
    )
    notes = store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="note\n", actor=system
    )
    old = store.file_create(
        project=project, scope="workspace", path="notes/old.md", content="old\n", actor=system
    )
    removal.file_rename(
        file=old.file,
        target=records.workspace_file_new(project=project, path="notes/new.md"),
        actor=system,
        base_revision=1,
    )
    token, _ = bearer.token_create(agent=agent, name="runner", created_by=people[ADMIN])
    own_session = AgentSession.objects.create(agent=agent, user=people[EMPLOYEE], prompt_sha256="0" * 64)
    ivan_session = AgentSession.objects.create(agent=agent, user=ivan, prompt_sha256="0" * 64)
    proposal = Proposal.objects.create(
        project=project, file=mine.file, agent=agent, mode="append", content="likes tea"
    )
    ivan_proposal = Proposal.objects.create(
        project=project, file=theirs.file, agent=agent, mode="append", content="likes coffee"
    )
    soul_proposal = Proposal.objects.create(
        project=project, file=soul.file, agent=agent, mode="append", content="be loud"
    )
    flag = review.flag_create(by=people[COMPLIANCE], file=notes.file, number=1, comment="check")
    hold = LegalHold.objects.create(
        project=project, kind="project", target="project incidents", reason="matrix", placed_by=people[ADMIN]
    )
    refused = RefusedWrite.objects.create(
        project=project,
        key=f"{project.prefix}workspace/.x.md",
        etag='"0"',
        size=1,
        reason="name",
        writer_label="external",
    )
    # On a revision Maria wrote: hers to read and answer, not to resolve.
    mine_flag = review.flag_create(by=people[COMPLIANCE], file=mine.file, number=2, comment="is this yours?")
    webhook = WebhookSubscription.objects.create(
        project=project, url="https://example.com/h", events=["flag.created"], secret="whsec_AAAA"
    )
    # Subjects' requests handled in the project: Maria's own (she sees it), and Ivan's.
    maria_request = SubjectRequest.objects.create(
        project=project, user=people[EMPLOYEE], kind="access", law="gdpr", due_on="2026-02-28"
    )
    ivan_request = SubjectRequest.objects.create(
        project=project, user=ivan, kind="access", law="gdpr", due_on="2026-02-28"
    )
    document = SubjectDocument.objects.create(
        request=ivan_request, kind="package", bucket="b", key="_records/x.zip", sha256="0" * 64, size=1
    )
    job = BackgroundJob.objects.create(
        project=project,
        kind="retention",
        key=f"retention:{project.pk}",
        state="done",
        requested_by=people[ADMIN],
    )
    ids = {
        "slug": project.slug,
        "job": job.pk,
        "maria_request": maria_request.pk,
        "ivan_request": ivan_request.pk,
        "document": document.pk,
        "identity": "identity",
        "agent": agent.slug,
        "soul": soul.file_id,
        "mine": mine.file_id,
        "theirs": theirs.file_id,
        "notes": notes.file_id,
        "token": token.pk,
        "own_session": own_session.pk,
        "ivan_session": ivan_session.pk,
        "proposal": proposal.pk,
        "ivan_proposal": ivan_proposal.pk,
        "soul_proposal": soul_proposal.pk,
        "flag": flag.pk,
        "mine_flag": mine_flag.pk,
        "ivan": ivan.pk,
        "refused": refused.pk,
        "hold": hold.pk,
        "webhook": webhook.pk,
        "scan": PoisonScan.objects.create(project=project, state="done").pk,
        "ivan_membership": Membership.objects.get(user=ivan).pk,
        "renamed": old.file_id,
    }
    return World(project, other, people, ids)


# (url name, method, kwargs with {placeholders}, POST data, who may) -- the whole console.
ROWS = [
    ("dashboard", "get", {}, None, ALL | {OUTSIDER}),
    ("project_list", "get", {}, None, ALL | {OUTSIDER}),
    ("preview", "post", {}, {"content": "# hi"}, ALL | {OUTSIDER}),
    ("audit_log", "get", {}, None, REVIEW | {OUTSIDER}),  # the outsider sees their own project's
    ("project_new", "get", {}, None, set()),  # superusers only; none of these people is one
    ("project_detail", "get", {"slug": "slug"}, None, ALL),
    ("project_settings", "get", {"slug": "slug"}, None, MANAGE),
    ("agent_new", "get", {"slug": "slug"}, None, MANAGE),
    ("agent_detail", "get", {"slug": "slug", "agent_slug": "agent"}, None, ALL),
    ("agent_settings", "get", {"slug": "slug", "agent_slug": "agent"}, None, MANAGE),
    ("token_create", "post", {"slug": "slug", "agent_slug": "agent"}, {"name": ""}, MANAGE),
    ("token_revoke", "post", {"slug": "slug", "agent_slug": "agent", "token_id": "token"}, {}, MANAGE),
    ("credentials_issue", "post", {"slug": "slug", "agent_slug": "agent", "token_id": "token"}, {}, MANAGE),
    ("credentials_revoke", "post", {"slug": "slug", "agent_slug": "agent", "token_id": "token"}, {}, MANAGE),
    ("simulate", "get", {"slug": "slug"}, None, ALL),
    ("session_list", "get", {"slug": "slug"}, None, ALL),
    ("session_detail", "get", {"slug": "slug", "session_id": "own_session"}, None, ALL),
    ("session_detail", "get", {"slug": "slug", "session_id": "ivan_session"}, None, REVIEW),
    ("proposal_list", "get", {"slug": "slug"}, None, ALL),  # employees: their own USER.md's
    ("proposal_bulk", "get", {"slug": "slug"}, None, ALL),  # employees: their own USER.md's
    ("proposal_bulk", "post", {"slug": "slug"}, {"decision": "neither"}, ALL),
    ("proposal_decide", "post", {"slug": "slug", "proposal_id": "proposal"}, {"decision": "neither"}, OWNER),
    (
        "proposal_decide",
        "post",
        {"slug": "slug", "proposal_id": "ivan_proposal"},
        {"decision": "neither"},
        MANAGE,
    ),
    (
        "proposal_decide",
        "post",
        {"slug": "slug", "proposal_id": "soul_proposal"},
        {"decision": "neither"},
        MANAGE,
    ),
    ("people", "get", {"slug": "slug"}, None, ALL),
    ("members", "get", {"slug": "slug"}, None, MANAGE),
    ("member_invite", "post", {"slug": "slug"}, {"account-username": ""}, MANAGE),
    ("member_reinvite", "post", {"slug": "slug", "membership_id": "ivan_membership"}, {}, MANAGE),
    (
        "member_change",
        "post",
        {"slug": "slug", "membership_id": "ivan_membership"},
        {"role": "employee"},
        MANAGE,
    ),
    ("group_mappings", "get", {"slug": "slug"}, None, MANAGE),
    ("group_mappings", "post", {"slug": "slug"}, {"group": "", "role": "admin"}, MANAGE),
    ("webhook_list", "get", {"slug": "slug"}, None, MANAGE),
    ("webhook_list", "post", {"slug": "slug"}, {"url": ""}, MANAGE),
    ("webhook_detail", "get", {"slug": "slug", "webhook_id": "webhook"}, None, MANAGE),
    ("webhook_action", "post", {"slug": "slug", "webhook_id": "webhook"}, {"action": "none"}, MANAGE),
    ("profile_erase", "get", {"slug": "slug", "user_id": "ivan"}, None, MANAGE),
    ("isolation", "get", {"slug": "slug"}, None, MANAGE),
    ("project_export", "get", {"slug": "slug"}, None, REVIEW),
    ("review_queue", "get", {"slug": "slug"}, None, REVIEW),
    ("review_file", "get", {"slug": "slug", "file_id": "notes"}, None, REVIEW),
    ("search", "get", {"slug": "slug"}, None, REVIEW),
    ("review_mark", "post", {"slug": "slug", "file_id": "notes"}, {"number": 1}, REVIEW),
    ("flag_create", "post", {"slug": "slug", "file_id": "notes"}, {"number": 1, "comment": ""}, REVIEW),
    ("flag_resolve", "post", {"slug": "slug", "flag_id": "flag"}, {}, REVIEW),
    ("flag_resolve", "post", {"slug": "slug", "flag_id": "mine_flag"}, {}, REVIEW),
    ("flag_detail", "get", {"slug": "slug", "flag_id": "flag"}, None, REVIEW),
    ("flag_detail", "get", {"slug": "slug", "flag_id": "mine_flag"}, None, ALL),
    ("flag_reply", "post", {"slug": "slug", "flag_id": "flag"}, {"text": ""}, REVIEW),
    ("flag_reply", "post", {"slug": "slug", "flag_id": "mine_flag"}, {"text": ""}, ALL),
    ("workspace", "get", {"slug": "slug"}, None, REVIEW),
    ("workspace_new", "post", {"slug": "slug"}, {"path": "../bad"}, MANAGE),
    ("file_new", "get", {"slug": "slug"}, None, MANAGE),
    (
        "file_open",
        "post",
        {"slug": "slug"},
        {"scope": "agent", "agent": "{agent_id}", "path": "TOOLS.md"},
        MANAGE,
    ),
    ("file_open", "post", {"slug": "slug"}, {"scope": "user", "user": "{ivan}"}, MANAGE),
    ("file_detail", "get", {"slug": "slug", "file_id": "soul"}, None, ALL),
    ("file_detail", "get", {"slug": "slug", "file_id": "mine"}, None, ALL),
    ("file_detail", "get", {"slug": "slug", "file_id": "theirs"}, None, REVIEW),
    ("file_detail", "get", {"slug": "slug", "file_id": "notes"}, None, REVIEW),
    ("file_edit", "get", {"slug": "slug", "file_id": "soul"}, None, MANAGE),
    ("file_edit", "get", {"slug": "slug", "file_id": "mine"}, None, OWNER),
    ("file_edit", "get", {"slug": "slug", "file_id": "theirs"}, None, MANAGE),
    ("file_edit", "get", {"slug": "slug", "file_id": "notes"}, None, MANAGE),
    ("file_history", "get", {"slug": "slug", "file_id": "mine"}, None, ALL),
    ("file_history", "get", {"slug": "slug", "file_id": "theirs"}, None, REVIEW),
    ("file_diff", "get", {"slug": "slug", "file_id": "mine"}, None, ALL),
    ("file_diff", "get", {"slug": "slug", "file_id": "theirs"}, None, REVIEW),
    ("file_blame", "get", {"slug": "slug", "file_id": "mine"}, None, ALL),
    ("file_blame", "get", {"slug": "slug", "file_id": "theirs"}, None, REVIEW),
    ("file_carried", "get", {"slug": "slug", "file_id": "mine"}, None, ALL),
    ("file_carried", "get", {"slug": "slug", "file_id": "theirs"}, None, REVIEW),
    ("revision_detail", "get", {"slug": "slug", "file_id": "mine", "number": 1}, None, ALL),
    ("revision_detail", "get", {"slug": "slug", "file_id": "theirs", "number": 1}, None, REVIEW),
    ("revision_raw", "get", {"slug": "slug", "file_id": "mine", "number": 1}, None, ALL),
    ("revision_raw", "get", {"slug": "slug", "file_id": "notes", "number": 1}, None, REVIEW),
    ("file_restore", "post", {"slug": "slug", "file_id": "mine", "number": 1}, {}, OWNER),
    ("file_restore", "post", {"slug": "slug", "file_id": "soul", "number": 1}, {}, MANAGE),
    ("file_delete", "post", {"slug": "slug", "file_id": "notes"}, {}, MANAGE),
    ("file_rename_undo", "post", {"slug": "slug", "file_id": "renamed", "number": 2}, {}, MANAGE),
    ("file_delete", "post", {"slug": "slug", "file_id": "mine"}, {}, set()),  # only workspace
    ("refused_delete", "post", {"slug": "slug", "refused_id": "refused"}, {}, MANAGE),
    ("retention", "get", {"slug": "slug"}, None, REVIEW),
    ("memory_health", "get", {"slug": "slug"}, None, REVIEW),
    ("retention", "post", {"slug": "slug"}, {"kind": "sessions", "days": ""}, MANAGE),
    ("holds", "get", {"slug": "slug"}, None, REVIEW),
    ("job", "get", {"slug": "slug", "job_id": "job"}, None, REVIEW),
    ("job", "post", {"slug": "slug", "job_id": "job"}, {}, MANAGE),
    ("hold_release", "post", {"slug": "slug", "hold_id": "hold"}, {}, REVIEW),
    ("poisoning", "get", {"slug": "slug"}, None, REVIEW),
    ("poisoning_remove", "post", {"slug": "slug", "scan_id": "scan"}, {"key": "none"}, REVIEW),
    # Subjects' requests: the register shows each person what they may see; registering needs
    # a project to handle it in (the outsider handles theirs); a request is its handlers' and
    # its person's to read, its handlers' to act on.
    ("subject_requests", "get", {}, None, ALL | {OUTSIDER}),
    ("subject_requests", "post", {}, {"kind": "access"}, REVIEW | {OUTSIDER}),
    ("subject_ask", "get", {}, None, ALL | {OUTSIDER}),
    ("subject_request", "get", {"request_id": "maria_request"}, None, REVIEW | {EMPLOYEE}),
    ("subject_request", "get", {"request_id": "ivan_request"}, None, REVIEW),
    ("subject_request_status", "get", {"request_id": "ivan_request"}, None, REVIEW),
    (
        "subject_request_step",
        "post",
        {"request_id": "maria_request", "step": "identity"},
        {"text": ""},
        REVIEW,
    ),
    ("subject_document", "get", {"request_id": "ivan_request", "document_id": "document"}, None, REVIEW),
    ("project_subject_requests", "get", {"slug": "slug"}, None, REVIEW),
]


def _url(world: World, name: str, kwargs: dict, slug: str | None = None) -> str:
    values = {key: (world.ids[value] if isinstance(value, str) else value) for key, value in kwargs.items()}
    if slug and "slug" in values:
        values["slug"] = slug
    return reverse(f"projects:{name}", kwargs=values)


def _data(world: World, data: dict | None) -> dict | None:
    if data is None:
        return None
    agent_id = str(Agent.objects.get(project=world.project).pk)
    return {
        key: value.format(agent_id=agent_id, **world.ids) if isinstance(value, str) else value
        for key, value in data.items()
    }


def _call(client, method: str, url: str, data):
    return client.post(url, data or {}) if method == "post" else client.get(url)


def test_every_url_has_a_row():
    names = {p.name for p in get_resolver().url_patterns[-1].url_patterns}
    covered = {row[0] for row in ROWS}
    assert names - covered == set(), "add these URLs to the matrix"


@pytest.mark.parametrize("role", [ADMIN, COMPLIANCE, EMPLOYEE, OUTSIDER])
def test_each_role_gets_exactly_its_pages(client, world, role):
    client.force_login(world.people[role])
    wrong = []
    for name, method, kwargs, data, allowed in ROWS:
        url = _url(world, name, kwargs)
        response = _call(client, method, url, _data(world, data))
        expected_ok = role in allowed
        ok = response.status_code in (200, 302, 400, 409)
        if (
            response.status_code >= 500
            or (expected_ok and not ok)
            or (not expected_ok and response.status_code != 404)
        ):
            wrong.append((role, method, url, response.status_code, expected_ok))
    assert wrong == []


def test_an_admin_of_another_project_gets_404_for_every_object_under_their_own_slug(client, world):
    """Oscar administers `tenders`; putting this project's object ids under his own slug must
    not reach them (agent, file, revision, session, proposal, flag, token, member, person)."""
    client.force_login(world.people[OUTSIDER])
    leaks = []
    for name, method, kwargs, data, _allowed in ROWS:
        if set(kwargs) <= {"slug"}:
            continue  # no object in the URL: his own project's page, rightly his
        url = _url(world, name, kwargs, slug=world.other.slug)
        response = _call(client, method, url, _data(world, data))
        if response.status_code != 404:
            leaks.append((method, url, response.status_code))
    assert leaks == []
    # And the posted ids of another project's agent or member are refused too.
    for data in (
        {"scope": "agent", "agent": "{agent_id}", "path": "TOOLS.md"},
        {"scope": "user", "user": "{ivan}"},
    ):
        response = client.post(reverse("projects:file_open", args=[world.other.slug]), _data(world, data))
        assert response.status_code == 404


def test_anonymous_visitors_are_sent_to_login_everywhere(client, world):
    for name, method, kwargs, data, _allowed in ROWS:
        response = _call(client, method, _url(world, name, kwargs), _data(world, data))
        assert response.status_code == 302 and "/accounts/login/" in response.url, name


def test_outsiders_audit_page_has_nothing_of_this_project(client, world):
    client.force_login(world.people[OUTSIDER])
    page = client.get(reverse("projects:audit_log")).context["page"]
    assert all(event.project_id == world.other.pk for event in page.object_list)


# --- Runner API ----------------------------------------------------------------------------------


@pytest.fixture
def tokens(world):
    agent = Agent.objects.get(project=world.project)
    sibling = Agent.objects.create(project=world.project, slug="reporter", name="Reporter")
    foreign = Agent.objects.get(project=world.other)
    made = {
        name: bearer.token_create(agent=a, name=name, created_by=world.people[ADMIN])
        for name, a in [("own", agent), ("sibling", sibling), ("foreign", foreign), ("revoked", agent)]
    }
    bearer.token_revoke(token=made["revoked"][0], by=world.people[ADMIN])
    return {name: raw for name, (_, raw) in made.items()}


API = [
    ("/api/v1/hooks/pre", {"user": "maria"}, {"own", "sibling"}),
    ("/api/v1/hooks/post", {"session": "{own_session}", "writes": []}, {"own"}),
    ("/api/v1/hooks/tool", {"session": "{own_session}", "name": "grep"}, {"own"}),
    ("/api/v1/hooks/error", {"session": "{own_session}", "message": "boom"}, {"own"}),
    ("/api/v1/sandbox/files", {"session": "{own_session}"}, {"own"}),
    ("/api/v1/files/list", {"session": "{own_session}"}, {"own"}),
    ("/api/v1/files/read", {"session": "{own_session}", "path": "USER.md"}, {"own"}),
]


@pytest.mark.parametrize("caller", ["own", "sibling", "foreign", "revoked", "none"])
def test_api_matrix(client, world, tokens, caller):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {tokens[caller]}"} if caller in tokens else {}
    for path, body, allowed in API:
        payload = {
            k: v.format(**{k2: str(v2) for k2, v2 in world.ids.items()}) if isinstance(v, str) else v
            for k, v in body.items()
        }
        response = client.post(path, data=json.dumps(payload), content_type="application/json", **headers)
        if caller in ("revoked", "none"):
            expected = 401
        else:
            expected = 200 if caller in allowed else 404
        assert response.status_code == expected, (caller, path, response.content[:300])
        assert response["Content-Type"].startswith("application/json")


def test_every_console_post_needs_a_csrf_token(world):
    """The admin may do every POST of the matrix, yet none is accepted without the token."""
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(world.people[ADMIN])
    posts = [row for row in ROWS if row[1] == "post"]
    assert len(posts) >= 15
    for name, _method, kwargs, data, _allowed in posts:
        response = strict.post(_url(world, name, kwargs), _data(world, data) or {})
        assert response.status_code == 403, name
