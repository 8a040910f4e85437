"""Where every line came from and where it went (issue 36), through the real save path and a
real S3 server: blame after a person's write, an agent's append in a session, a restore and a
three-way merge; the sessions that carried a line; a rename; the backfill of history saved
before line maps; expiry and erasure leaving no text behind."""

from __future__ import annotations

import io
import json

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.core.management.base import CommandError

from projects.audit import Actor
from projects.governance import erasure
from projects.memory import blame, carried, lifecycle, lineage, merging, reading, removal, store
from projects.memory.records import file_by_path
from projects.models import AgentSession, LineMap, Membership, MemoryFile, Revision, SearchText, SessionFile
from projects.runners import hooks, prehook
from tests.conftest import reload_file

# The tests that depend on the database (locks, JSON and binary columns, the migration's
# queries) run on both; the rest are marked db_independent (the SQLite run only).
pytestmark = pytest.mark.django_db

MANIFEST = {
    "sections": [
        {"tag": "agent_identity", "source": "SOUL.md"},
        {"tag": "user_profile", "source": "USER.md"},
        {"tag": "workspace_memory", "source": "workspace/**.md"},
    ]
}


@pytest.fixture
def analyst(agent):
    agent.manifest = MANIFEST
    agent.hook_policy = {
        "post": {"workspace/**.md": {"modes": ["append", "replace"]}, "USER.md": {"modes": ["append"]}},
        "tool": {},
        "error": {},
    }
    agent.save()
    return agent


def lines(file: MemoryFile, revision: Revision | None = None) -> list[tuple]:
    """(text, origin revision, author, session) per line."""
    found = blame.blame(reload_file(file), revision)
    return [
        (line.text, line.origin.revision.number, line.origin.revision.author_label, line.origin.session_ref)
        for line in found.lines
    ]


def workspace(project, path, content, actor, message="") -> MemoryFile:
    revision = store.file_create(
        project=project, scope="workspace", path=path, content=content, actor=actor, message=message
    )
    return reload_file(revision.file)


def test_blame_through_a_persons_write_an_agents_append_a_restore_and_a_merge(
    s3, project, analyst, person, admin
):
    maria, olga = Actor.person(person), Actor.person(admin)
    notes = workspace(project, "notes/runbook.md", "# Runbook\nrestart the pod\ncheck the queue\n", maria)
    assert lines(notes) == [
        ("# Runbook", 1, "maria", ""),
        ("restart the pod", 1, "maria", ""),
        ("check the queue", 1, "maria", ""),
    ]

    session, _ = prehook.hook_pre(agent=analyst, user=person)
    hooks.hook_event(
        session=session,
        kind="tool",
        payload={"name": "kubectl_logs", "details": {"pod": "api-1", "path": "/var/log/api-1.log"}},
    )
    hooks.hook_event(
        session=session,
        kind="tool",
        payload={
            "name": "fetch",
            "summary": "read the vendor page",
            "details": {"url": "https://example.org/x"},
        },
    )
    [result] = hooks.hook_post(
        session=session,
        writes=[hooks.WriteRequest(path="workspace/notes/runbook.md", mode="append", content="scale to 3\n")],
    )
    assert result["revision"] == 2
    agent_line = ("scale to 3", 2, f"agent:{analyst.slug}", str(session.pk))
    assert lines(notes)[:3] == lines(notes, notes.revisions.get(number=1))
    assert lines(notes)[3] == agent_line
    [last] = blame.blame(reload_file(notes)).lines[3:]
    assert [(c.name, c.resource) for c in last.origin.tool_calls] == [
        ("kubectl_logs", "/var/log/api-1.log"),
        ("fetch", "https://example.org/x"),
    ]
    assert last.origin.session == session

    store.file_save(
        file=notes,
        content="# Runbook\nrestart the deployment\ncheck the queue\nscale to 3\n",
        actor=olga,
        base_revision=2,
    )
    assert [line[1:3] for line in lines(notes)] == [
        (1, "maria"),
        (3, "olga"),
        (1, "maria"),
        (2, agent_line[2]),
    ]

    # A restore brings back revision 1: its lines are maria's again, not "restored by olga".
    restored = store.file_restore(file=notes, number=1, actor=olga, base_revision=3)
    assert restored.number == 4
    assert lines(notes) == [
        ("# Runbook", 1, "maria", ""),
        ("restart the pod", 1, "maria", ""),
        ("check the queue", 1, "maria", ""),
    ]

    # A three-way merge: olga opened revision 4; meanwhile the agent replaced the middle line;
    # olga kept "restart the pod" and added a line under it. She takes her side: the line she
    # kept from the base keeps maria, her new line is hers, the agent's other line stays his.
    second, _ = prehook.hook_pre(agent=analyst, user=person)
    theirs = "# Runbook\nrestart the api\ncheck the queue\nwrite the incident note\n"
    hooks.hook_post(
        session=second,
        writes=[
            hooks.WriteRequest(
                path="workspace/notes/runbook.md", mode="replace", content=theirs, base_revision=4
            )
        ],
    )
    yours = "# Runbook\nrestart the pod\nthen wait 5 minutes\ncheck the queue\n"
    with pytest.raises(Exception) as conflict:
        store.file_save(file=notes, content=yours, actor=olga, base_revision=4)
    assert conflict.value.head.number == 5
    merged = merging.merge(
        reading.revision_read(notes.revisions.get(number=4)), theirs, yours, choices={0: "yours"}
    )
    assert merged.clean is False and merged.unresolved == 0
    saved = store.file_save(file=notes, content=merged.text, actor=olga, base_revision=5, merged_base=4)
    assert saved.merged_base == 4
    assert lines(notes) == [
        ("# Runbook", 1, "maria", ""),
        ("restart the pod", 1, "maria", ""),
        ("then wait 5 minutes", 6, "olga", ""),
        ("check the queue", 1, "maria", ""),
        ("write the incident note", 5, f"agent:{analyst.slug}", str(second.pk)),
    ]
    # Every step's own blame still reads as it did (a map per revision, rebuilt from deltas).
    assert lines(notes, notes.revisions.get(number=2))[3] == agent_line
    assert [line[1] for line in lines(notes, notes.revisions.get(number=3))] == [1, 3, 1, 2]


def test_carried_counts_exactly_the_sessions_that_received_the_line(s3, project, analyst, person):
    """A line added in revision 3 and removed in revision 7: exactly the sessions that received
    revisions 3 to 6. A line still there counts every session since it was written."""
    maria = Actor.person(person)
    notes = workspace(project, "notes/log.md", "start\n", maria)
    sessions = {}
    texts = {
        2: "start\nsecond\n",
        3: "start\nsecond\nthe line\n",
        4: "start\nsecond\nthe line\nfourth\n",
        5: "start\nthe line\nfourth\n",
        6: "start\nthe line\nfourth\nsixth\n",
        7: "start\nfourth\nsixth\n",
        8: "start\nfourth\nsixth\neighth\n",
    }
    sessions[1] = prehook.hook_pre(agent=analyst, user=person)[0]
    for number, text in texts.items():
        store.file_save(file=notes, content=text, actor=maria, base_revision=number - 1)
        sessions[number] = prehook.hook_pre(agent=analyst, user=person)[0]
    third = lineage.line_map(reload_file(notes), 3)[2]
    found = carried.carried(reload_file(notes), revision=3, line=3)
    assert [(s.first, s.last) for s in found.spans] == [(3, 6)]
    assert {row.session_id for row in found.sessions} == {sessions[n].pk for n in (3, 4, 5, 6)}
    assert found.origin.number == 3
    # The same line asked from revision 5, where it stands on line 2: the same answer.
    assert lineage.line_map(reload_file(notes), 5)[1] == third
    assert {r.session_id for r in carried.carried(reload_file(notes), revision=5, line=2).sessions} == {
        sessions[n].pk for n in (3, 4, 5, 6)
    }
    # "start" has been there all along: every session.
    assert carried.carried(reload_file(notes), revision=8, line=1).sessions.count() == 8
    # A revision: the sessions that received that revision.
    assert [r.session_id for r in carried.carried(reload_file(notes), revision=4).sessions] == [
        sessions[4].pk
    ]

    out = io.StringIO()
    call_command(
        "carried",
        "--project",
        project.slug,
        "--path",
        "workspace/notes/log.md",
        "--revision",
        "3",
        "--line",
        "3",
        "--json",
        stdout=out,
        stderr=io.StringIO(),
    )
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {row["session"] for row in rows} == {str(sessions[n].pk) for n in (3, 4, 5, 6)}
    assert {row["revision"] for row in rows} == {3, 4, 5, 6}
    assert all(row["agent"] == analyst.slug and row["user"] == person.username for row in rows)


@pytest.mark.db_independent
def test_a_restore_brings_back_the_line_and_its_sessions(s3, project, analyst, person):
    maria = Actor.person(person)
    notes = workspace(project, "notes/flip.md", "a\nthe line\n", maria)
    first = prehook.hook_pre(agent=analyst, user=person)[0]
    store.file_save(file=notes, content="a\n", actor=maria, base_revision=1)
    gap = prehook.hook_pre(agent=analyst, user=person)[0]
    store.file_restore(file=notes, number=1, actor=maria, base_revision=2)
    back = prehook.hook_pre(agent=analyst, user=person)[0]
    found = carried.carried(reload_file(notes), revision=1, line=2)
    assert [(s.first, s.last) for s in found.spans] == [(1, 1), (3, 3)]
    assert {r.session_id for r in found.sessions} == {first.pk, back.pk}
    assert gap.pk not in {r.session_id for r in found.sessions}


@pytest.mark.db_independent
def test_a_rename_keeps_the_authors_and_the_sessions_before_it(s3, project, analyst, person, admin):
    maria = Actor.person(person)
    old = workspace(project, "notes/old.md", "kept line\n", maria)
    before = prehook.hook_pre(agent=analyst, user=person)[0]
    target = MemoryFile.objects.create(
        project=project, scope="workspace", path="notes/new.md", key=old.key.replace("old.md", "new.md")
    )
    _gone, moved = removal.file_rename(file=old, target=target, actor=Actor.person(admin), base_revision=1)
    after = prehook.hook_pre(agent=analyst, user=person)[0]
    assert lines(target) == [("kept line", 1, "maria", "")]
    assert blame.blame(reload_file(target)).lines[0].origin.revision.file_id == old.pk
    found = carried.carried(reload_file(target), revision=moved.number, line=1)
    assert {r.session_id for r in found.sessions} == {before.pk, after.pk}


def history_blames(files) -> dict:
    return {
        (f.pk, r.number): [
            (line.text, line.origin.revision.pk, line.origin_line)
            for line in blame.blame(reload_file(f), r).lines
        ]
        for f in files
        for r in Revision.objects.filter(file=f).order_by("number")
    }


def test_the_backfill_over_old_history_gives_the_blame_of_the_save_path(s3, project, analyst, person, admin):
    """History made by the old code had no line maps: the migration computes them from the
    search copies, in batches, and gets exactly the maps every save now stores."""
    from importlib import import_module

    migration = import_module("projects.migrations.0029_backfill_provenance")
    maria, olga = Actor.person(person), Actor.person(admin)
    notes = workspace(project, "notes/a.md", "one\ntwo\nthree\n", maria)
    session = prehook.hook_pre(agent=analyst, user=person)[0]
    hooks.hook_post(
        session=session,
        writes=[hooks.WriteRequest(path="workspace/notes/a.md", mode="append", content="four\n")],
    )
    store.file_save(file=notes, content="one\nTWO\nthree\nfour\n" * 3, actor=olga, base_revision=2)
    store.file_restore(file=notes, number=2, actor=olga, base_revision=3)
    store.file_save(file=notes, content="zero\none\ntwo\nthree\nfour\n", actor=maria, base_revision=4)
    theirs = "zero\none\ntwo\nthree\nfour\nfive\n"
    store.file_save(file=notes, content=theirs, actor=maria, base_revision=5)
    merged = merging.merge("zero\none\ntwo\nthree\nfour\n", theirs, "zero\none\n2\nthree\nfour\n")
    store.file_save(file=notes, content=merged.text, actor=olga, base_revision=6, merged_base=5)
    removal.file_delete(file=reload_file(notes), actor=olga, base_revision=7)
    store.file_restore(file=reload_file(notes), number=3, actor=olga, base_revision=8)
    target = MemoryFile.objects.create(
        project=project, scope="workspace", path="notes/b.md", key=notes.key.replace("a.md", "b.md")
    )
    removal.file_rename(file=reload_file(notes), target=target, actor=olga, base_revision=9)
    store.file_save(file=reload_file(target), content="moved\n" + "one\nTWO\n", actor=olga, base_revision=1)
    files = [reload_file(notes), reload_file(target)]
    expected = history_blames(files)
    stored = sorted(LineMap.objects.values_list("file_id", "number", "base", "lines", "data"))

    LineMap.objects.all().delete()  # the history as the old code left it
    migration.REVISIONS_A_BATCH = 3  # several batches over the short history
    assert migration.backfill_line_maps(django_apps) == len(stored)
    assert sorted(LineMap.objects.values_list("file_id", "number", "base", "lines", "data")) == stored
    assert history_blames(files) == expected

    # Without the search copies (a history older than search), blame fills the maps in from S3.
    LineMap.objects.all().delete()
    SearchText.objects.all().delete()
    assert migration.backfill_line_maps(django_apps) == 0
    assert history_blames(files) == expected
    assert not LineMap.objects.filter(approximate=True).exists()
    # The same, ahead of time, for an operator after the upgrade.
    LineMap.objects.all().delete()
    out = io.StringIO()
    call_command("fill_line_maps", stdout=out, stderr=io.StringIO())
    assert f"{len(stored)} line map(s) stored" in out.getvalue()
    assert sorted(LineMap.objects.values_list("file_id", "number", "base", "lines", "data")) == stored


def test_sessions_are_indexed_off_the_pre_hooks_path_and_backfilled(s3, project, analyst, person):
    from importlib import import_module

    migration = import_module("projects.migrations.0029_backfill_provenance")
    workspace(project, "notes/a.md", "one\n", Actor.person(person))
    sessions = [prehook.hook_pre(agent=analyst, user=person)[0] for _ in range(3)]
    assert not SessionFile.objects.exists()  # the pre hook writes one row, its session
    assert carried.index_sessions() == 3
    rows = sorted(SessionFile.objects.values_list("session_id", "file_ref", "revision", "tag", "cut"))
    assert len(rows) == 3 and {s.pk for s in sessions} == {r[0] for r in rows}
    assert carried.index_sessions() == 0  # each session once
    SessionFile.objects.all().delete()
    AgentSession.objects.update(carried_indexed=False)  # sessions recorded before the index
    migration.SESSIONS_A_BATCH = 2
    assert migration.backfill_session_files(django_apps) == 3
    assert sorted(SessionFile.objects.values_list("session_id", "file_ref", "revision", "tag", "cut")) == rows
    assert migration.backfill_session_files(django_apps) == 0
    assert carried.index_sessions() == 0
    # A session's post hook indexes it at once.
    posted = prehook.hook_pre(agent=analyst, user=person)[0]
    hooks.hook_post(session=posted, writes=[])
    assert SessionFile.objects.filter(session=posted).count() == 1
    assert AgentSession.objects.get(pk=posted.pk).carried_indexed


@pytest.mark.db_independent
def test_a_text_gone_before_its_map_was_made_gives_an_approximate_map(s3, project, person):
    maria = Actor.person(person)
    notes = workspace(project, "notes/a.md", "one\n", maria)
    store.file_save(file=notes, content="one\ntwo\n", actor=maria, base_revision=1)
    store.file_save(file=notes, content="one\ntwo\nthree\n", actor=maria, base_revision=2)
    lifecycle.revisions_purge(file=reload_file(notes), numbers=[2])
    LineMap.objects.all().delete()
    result = blame.blame(reload_file(notes))
    assert [(line.text, line.origin.revision.number) for line in result.lines] == [
        ("one", 1),
        ("two", 3),  # revision 2's text is gone: the line may be older, and says so
        ("three", 3),
    ]
    assert [line.origin.approximate for line in result.lines] == [False, True, True]
    purged = blame.blame(reload_file(notes), reload_file(notes).revisions.get(number=2))
    assert purged.text_gone and all(line.text is None for line in purged.lines)


@pytest.mark.db_independent
def test_expired_text_leaves_who_and_when_but_no_text(s3, project, analyst, person):
    maria = Actor.person(person)
    notes = workspace(project, "notes/secret.md", "the launch code is 1234\n", maria)
    prehook.hook_pre(agent=analyst, user=person)
    lifecycle.file_expire(file=reload_file(notes), rule="workspace/notes/**.md after 30 days")
    first = reload_file(notes).revisions.get(number=1)
    result = blame.blame(reload_file(notes), first)
    assert result.text_gone and result.total == 1
    assert [(line.text, line.origin.revision.author_label) for line in result.lines] == [(None, "maria")]
    out = io.StringIO()
    call_command(
        "blame",
        "--project",
        project.slug,
        "--path",
        "workspace/notes/secret.md",
        "--revision",
        "1",
        "--json",
        stdout=out,
        stderr=io.StringIO(),
    )
    assert "1234" not in out.getvalue()
    assert json.loads(out.getvalue())["text"] is None
    assert carried.carried(reload_file(notes), revision=1, line=1).sessions.count() == 1


@pytest.mark.db_independent
def test_a_line_under_a_legal_hold_is_shown_held(s3, project, person, admin):
    from projects.governance import holds as governance_holds
    from projects.memory import holds as memory_holds

    notes = workspace(project, "notes/held.md", "evidence\n", Actor.person(person))
    assert not blame.blame(reload_file(notes)).lines[0].origin.held
    other = workspace(project, "other/free.md", "free\n", Actor.person(person))
    profile = store.file_create(
        project=project, scope="user", user=person, path="USER.md", content="x\n", actor=Actor.person(person)
    ).file
    governance_holds.hold_place(
        by=admin, project=project, file=notes, reason="litigation", case_reference="C-1"
    )
    assert blame.blame(reload_file(notes)).lines[0].origin.held
    assert not blame.blame(reload_file(other)).lines[0].origin.held
    governance_holds.hold_place(by=admin, project=project, glob="workspace/other/**.md", reason="audit")
    governance_holds.hold_place(by=admin, project=project, user=person, reason="claim")
    files = [reload_file(f) for f in (notes, other, profile)]
    together = memory_holds.covering_files(files)
    assert {f.pk: [h.pk for h in together.get(f.pk, [])] for f in files} == {
        f.pk: [h.pk for h in memory_holds.covering_file(f)] for f in files
    }
    assert all(blame.blame(f).lines[0].origin.held for f in files)


@pytest.mark.db_independent
def test_blame_and_carried_commands(s3, project, analyst, person):
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="- prefers calls\n",
        actor=Actor.person(person),
    ).file
    session = prehook.hook_pre(agent=analyst, user=person)[0]
    hooks.hook_post(
        session=session,
        writes=[hooks.WriteRequest(path="USER.md", mode="append", content="- Prefers calls before 10:00\n")],
    )
    out = io.StringIO()
    call_command(
        "blame",
        "--project",
        project.slug,
        "--path",
        "USER.md",
        "--user",
        person.username,
        "--json",
        stdout=out,
    )
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [set(row) for row in rows] == [
        {"line", "text", "revision", "author", "author_kind", "session", "at"}
    ] * 2
    assert rows[1] == {
        "line": 2,
        "text": "- Prefers calls before 10:00",
        "revision": 2,
        "author": f"agent:{analyst.slug}",
        "author_kind": "agent",
        "session": str(session.pk),
        "at": reload_file(profile).head.created_at.isoformat(),
    }
    assert rows[0]["author_kind"] == "person" and rows[0]["session"] is None
    plain = io.StringIO()
    call_command(
        "blame", "--project", project.slug, "--path", f"users/{person.username}/USER.md", stdout=plain
    )
    assert str(session.pk)[:8] in plain.getvalue() and "Prefers calls before 10:00" in plain.getvalue()
    with pytest.raises(CommandError, match="needs --user"):
        call_command("blame", "--project", project.slug, "--path", "USER.md")
    with pytest.raises(CommandError, match="no revision 9"):
        call_command(
            "blame",
            "--project",
            project.slug,
            "--path",
            "USER.md",
            "--user",
            person.username,
            "--revision",
            "9",
        )


def test_erasure_leaves_no_text_in_blame_carried_or_the_origin_view(
    s3, client, project, analyst, person, admin
):
    """After a profile is erased: the sessions that carried it are still counted, with their
    dates; no text of it is anywhere a blame, a carried list or a prompt's origin shows."""
    secret = "- Diagnosed with a rare condition"
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content=f"{secret}\n",
        actor=Actor.person(person),
    )
    sessions = [prehook.hook_pre(agent=analyst, user=person)[0] for _ in range(2)]
    erasure.profile_erase(by=admin, user=person, reason="Art. 17 request", projects=[project])
    assert file_by_path(project=project, path="USER.md", user=person) is None

    with pytest.raises(CommandError) as erased:
        call_command("blame", "--project", project.slug, "--path", "USER.md", "--user", person.username)
    assert "was erased" in str(erased.value) and "rare condition" not in str(erased.value)
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "carried",
        "--project",
        project.slug,
        "--path",
        "USER.md",
        "--user",
        person.username,
        "--revision",
        "1",
        "--json",
        stdout=out,
        stderr=err,
    )
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {row["session"] for row in rows} == {str(s.pk) for s in sessions}
    assert all(row["at"] and row["revision"] == 1 for row in rows)
    assert "rare condition" not in out.getvalue() + err.getvalue()

    client.force_login(admin)
    page = client.get(f"/p/{project.slug}/sessions/{sessions[0].pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "rare condition" not in body
    assert "USER.md" in body and "r1" in body  # the receipt still names what was injected


@pytest.mark.db_independent
def test_line_maps_hold_no_text_and_go_with_an_erasure(s3, project, person, admin):
    """Line maps hold no text, so they need no scrubbing; an erasure removes them with the
    revisions it removes."""
    store.file_create(
        project=project, scope="user", user=person, path="USER.md", content="x\n", actor=Actor.person(person)
    )
    assert LineMap.objects.count() == 1
    erasure.profile_erase(by=admin, user=person, reason="request", projects=[project])
    assert LineMap.objects.count() == 0
    assert Membership.objects.filter(user=person).exists()


def test_every_door_records_where_its_lines_came_from(s3, project, person, admin, revision_inserts_fail):
    """Saves, appends, a direct write found in the bucket, a save finished after its worker
    died, a delete and an expiry: each revision has its line map, made in its own transaction."""
    from projects.memory import adoption

    revision_inserts_fail.stop()
    maria = Actor.person(person)
    notes = workspace(project, "notes/doors.md", "one\n", maria)
    store.file_append(file=notes, addition="two\n", actor=maria)
    s3.put(notes.key, b"one\ntwo\nthree from the bucket\n")  # a direct write
    adoption.adopt(reload_file(notes))
    assert lines(notes)[2] == ("three from the bucket", 3, "external", "")
    revision_inserts_fail.start()  # the next save writes S3, then its commit fails
    with pytest.raises(Exception):
        store.file_save(file=reload_file(notes), content="one\ntwo\nfour\n", actor=maria, base_revision=3)
    revision_inserts_fail.stop()
    adoption.adopt(reload_file(notes))  # finished as maria's save
    assert lines(notes)[2] == ("four", 4, "maria", "")
    removal.file_delete(file=reload_file(notes), actor=maria, base_revision=4)
    store.file_restore(file=reload_file(notes), number=4, actor=Actor.person(admin), base_revision=5)
    assert [line[1:3] for line in lines(notes)] == [(1, "maria"), (2, "maria"), (4, "maria")]
    lifecycle.file_expire(file=reload_file(notes), rule="workspace/notes/**.md after 1 day")
    numbers = list(Revision.objects.filter(file=notes).order_by("number").values_list("number", flat=True))
    assert numbers == list(range(1, 8))
    assert sorted(LineMap.objects.filter(file=notes).values_list("number", "lines")) == [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 3),
        (5, 0),
        (6, 3),
        (7, 0),
    ]
    # The texts went with the expiry; the maps (no text) stay, and blame says who and when.
    assert not Revision.objects.filter(file=notes, is_deletion=False, purged_at__isnull=True).exists()
    expired = blame.blame(reload_file(notes), notes.revisions.get(number=6))
    assert [(line.text, line.origin.revision.number) for line in expired.lines] == [
        (None, 1),
        (None, 2),
        (None, 4),
    ]


@pytest.mark.db_independent
def test_storage_down_while_filling_in_makes_no_approximate_map(s3, project, person):
    """Filling in older history reads snapshots from S3: storage not answering is said so (the
    page's 503), never taken as a text gone for good; the next blame, with storage back, is
    exact."""
    from django.core.cache import cache

    from projects.memory.errors import StorageUnavailable

    maria = Actor.person(person)
    notes = workspace(project, "notes/outage.md", "one\n", maria)
    store.file_save(file=notes, content="one\ntwo\n", actor=maria, base_revision=1)
    expected = lines(notes)
    LineMap.objects.all().delete()
    SearchText.objects.all().delete()
    cache.clear()
    s3.proxy.inject("GET", r"/_history/", status=503, times=50)
    with pytest.raises(StorageUnavailable):
        blame.blame(reload_file(notes))
    assert not LineMap.objects.exists()
    s3.proxy.heal()
    assert lines(notes) == expected
    assert not LineMap.objects.filter(approximate=True).exists()
