"""The whole interface in Russian: what the console itself writes into records (revision
messages of hooks, approvals, direct writes in storage, restores; audit object labels) is
stored as a code with parameters and read in the reader's language, while old rows keep their
stored text and the audit chain still verifies; dates are accepted as the pages show them."""

import datetime as dt
import hashlib
import json

import pytest
from django.urls import reverse
from django.utils import translation

from projects.audit import Actor, audit_record, audit_verify, event_hash
from projects.governance import members
from projects.memory import adoption, store
from projects.models import AuditEvent, Proposal, Revision
from projects.runners import context as prompt_context
from projects.runners import hooks, prehook, proposals

pytestmark = pytest.mark.django_db


def _russian(client, url) -> str:
    client.cookies["django_language"] = "ru"
    return client.get(url).content.decode()


def test_system_revision_messages_read_in_the_readers_language(client, s3, project, agent, person, admin):
    file = store.file_create(
        project=project,
        scope="workspace",
        path="notes/a.md",
        content="one\n",
        actor=Actor.person(admin),
        message="by hand",
    ).file
    s3.put(file.key, b"changed in the bucket\n")  # a direct write: adopted by the next save
    adoption.adopt(file)
    store.file_restore(file=file, number=1, actor=Actor.person(admin), base_revision=2)
    agent.hook_policy = {
        "post": {
            "workspace/**.md": {"modes": ["append"], "approval": False},
            "USER.md": {"modes": ["append"], "approval": True},
        },
        "tool": {"log": "workspace/logs/tools.md"},
    }
    agent.save()
    session, _ = prehook.hook_pre(agent=agent, user=person)
    hooks.hook_post(
        session=session,
        writes=[
            hooks.WriteRequest("workspace/notes/a.md", "append", "two\n"),
            hooks.WriteRequest("USER.md", "append", "likes tea\n"),
        ],
    )
    hooks.hook_event(session=session, kind="tool", payload={"name": "grep", "summary": "ok"})
    proposals.proposal_approve(proposal=Proposal.objects.get(), by=person, note="да")
    codes = dict(Revision.objects.exclude(message_code="").values_list("message_code", "message"))
    assert codes == {
        "external_change": "Changed directly in storage",
        "restore": "Restore revision 1",
        "post_hook": f"Post hook of session {str(session.id)[:8]}",
        "tool_hook": "tool hook",
        "approved_note": "Approved by maria: да",
    }
    assert Revision.objects.get(file=file, number=1).message_code == ""  # a person's words
    client.force_login(admin)
    history = _russian(client, reverse("projects:file_history", args=[project.slug, file.pk]))
    assert "Изменено напрямую в хранилище" in history and "Changed directly" not in history
    assert "Восстановление версии 1" in history
    assert f"Пост-хук сессии {str(session.id)[:8]}" in history
    assert "by hand" in history  # what a person typed stays as typed
    profile = Revision.objects.get(message_code="approved_note").file
    page = _russian(client, reverse("projects:file_history", args=[project.slug, profile.pk]))
    assert "Одобрил(а) maria: да" in page
    with translation.override("ru"):
        assert Revision.objects.get(message_code="tool_hook").display_message == "вызов инструмента"


def test_old_revisions_keep_their_stored_message(s3, project, admin):
    revision = store.file_create(
        project=project, scope="workspace", path="n.md", content="x\n", actor=Actor.person(admin)
    )
    Revision.objects.filter(pk=revision.pk).update(message="Changed directly in storage")
    with translation.override("ru"):
        assert Revision.objects.get(pk=revision.pk).display_message == "Changed directly in storage"


def test_audit_object_labels_read_in_russian_and_the_chain_verifies(client, project, admin, make_user):
    nina = make_user("nina")
    members.member_set(by=admin, project=project, user=nina, role="compliance")
    event = AuditEvent.objects.get(action="member.grant")
    assert (event.repr_code, event.repr_params["role"]) == ("membership", "compliance")
    assert event.object_repr.startswith("nina in")  # the English text stays, for exports
    client.force_login(admin)
    page = _russian(client, reverse("projects:audit_log"))
    assert f"nina в проекте {project.name}, роль: Комплаенс" in page
    assert audit_verify() == []
    AuditEvent.objects.filter(pk=event.pk).update(repr_params={"role": "admin"})
    assert any("was edited" in problem for problem in audit_verify())  # the code is hashed


def test_events_without_a_code_hash_as_they_always_did(project, admin):
    """Rows written before the codes: the hash is over the fields it always covered."""
    event = audit_record(
        actor=Actor.person(admin),
        action="project.update",
        project=project,
        obj=project,
        details={"changed": ["name"]},
    )
    assert event.repr_code == ""
    fields = {
        "seq": event.seq,
        "prev": event.prev_hash,
        "at": event.created_at.astimezone(dt.UTC).isoformat(),
        "actor_user": event.actor_user_id,
        "actor_agent": "",
        "actor": event.actor_label,
        "action": event.action,
        "project": str(event.project_id),
        "type": "project",
        "object": event.object_id,
        "repr": event.object_repr,
        "details": event.details,
    }
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert event_hash(event) == hashlib.sha256(canonical.encode()).hexdigest() == event.hash


@pytest.mark.parametrize(
    "typed",
    [
        "04.12.2026 11:45",
        "04.12.2026 11:45:00",
        "04.12.2026",
        "2026-12-04 11:45",
        "2026-12-04T11:45",
        " 2026-12-04 11:45 ",
    ],
)
def test_moments_are_accepted_as_the_pages_show_them(typed):
    moment = prompt_context.parse_moment(typed)
    assert moment.date() == dt.date(2026, 12, 4) and moment.tzinfo == dt.UTC


def test_simulate_and_the_audit_filters_take_the_russian_date_format(client, s3, project, agent, admin):
    client.force_login(admin)
    client.cookies["django_language"] = "ru"
    simulate = client.get(
        reverse("projects:simulate", args=[project.slug]), {"agent": agent.slug, "at": "04.12.2026 11:45"}
    )
    assert simulate.status_code == 200 and simulate.context["at"] == dt.datetime(
        2026, 12, 4, 11, 45, tzinfo=dt.UTC
    )
    audit = client.get(
        reverse("projects:audit_log"), {"since": "01.12.2026 00:00", "until": "31.12.2026 23:59"}
    )
    assert audit.status_code == 200
    bad = client.get(
        reverse("projects:simulate", args=[project.slug]), {"agent": agent.slug, "at": "32.12.2026"}
    )
    assert bad.status_code == 400 and "04.12.2026 11:45" in bad.content.decode()
