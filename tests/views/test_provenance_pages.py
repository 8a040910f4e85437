"""The pages of issue 36: a file's Blame tab, "where it went" (a page and CSV), the origins
beside a prompt's lines on the simulate and session pages, an agent's revision with its
session and what it did before the write; with the file's role rules (an employee: their own
profile and the agents' files; never another person's profile or session)."""

from __future__ import annotations

import csv
import io
import re

import pytest

from projects.audit import Actor
from projects.memory import store
from projects.models import Membership, MemoryFile
from projects.runners import hooks, prehook

# Pages over the same selectors tests/test_provenance.py runs on both databases: the SQLite run.
pytestmark = [pytest.mark.django_db, pytest.mark.db_independent]

MANIFEST = {
    "sections": [
        {"tag": "agent_identity", "source": "SOUL.md"},
        {"tag": "user_profile", "source": "USER.md"},
        {"tag": "workspace_memory", "source": "workspace/**.md"},
    ]
}


@pytest.fixture
def story(s3, project, agent, person, admin, make_user):
    """Maria's profile, written by her and then by the agent in a session after two tool calls;
    a workspace note; the agent's SOUL.md by the admin; a second person, Ivan, with a profile."""
    agent.manifest = MANIFEST
    agent.hook_policy = {"post": {"USER.md": {"modes": ["append"]}, "workspace/**.md": {"modes": ["append"]}}}
    agent.save()
    ivan = make_user("ivan")
    Membership.objects.create(user=ivan, project=project, role="employee")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You are careful.\n",
        actor=Actor.person(admin),
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="- Name: Maria\n",
        actor=Actor.person(person),
    )
    ivans = store.file_create(
        project=project,
        scope="user",
        user=ivan,
        path="USER.md",
        content="- Name: Ivan\n",
        actor=Actor.person(ivan),
    ).file
    store.file_create(
        project=project,
        scope="workspace",
        path="notes/oncall.md",
        content="pager rota\n",
        actor=Actor.person(admin),
    )
    session, _ = prehook.hook_pre(agent=agent, user=person)
    hooks.hook_event(
        session=session, kind="tool", payload={"name": "crm_lookup", "details": {"url": "https://crm.test/m"}}
    )
    hooks.hook_event(session=session, kind="error", payload={"message": "calendar timed out"})
    hooks.hook_post(
        session=session,
        writes=[hooks.WriteRequest(path="USER.md", mode="append", content="- Prefers calls before 10:00\n")],
    )
    later, _ = prehook.hook_pre(agent=agent, user=person)
    profile = MemoryFile.objects.get(project=project, scope="user", user=person)
    return {"session": session, "later": later, "profile": profile, "ivan": ivan, "ivans": ivans}


def test_blame_tab_names_each_lines_revision_author_session_and_last_tool_calls(
    client, project, admin, story
):
    client.force_login(admin)
    profile, session = story["profile"], story["session"]
    page = client.get(f"/p/{project.slug}/f/{profile.pk}/blame/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'aria-current="page">Blame</a>' in body
    first, second = re.findall(r'<tr id="L(\d+)"', body)
    assert (first, second) == ("1", "2")
    row = body[body.index('<tr id="L2"') :]
    row = row[: row.index("</tr>")]
    assert "- Prefers calls before 10:00" in row
    assert f"/p/{project.slug}/sessions/{session.pk}/" in row
    assert "crm_lookup" in row and "https://crm.test/m" in row and "calendar timed out" in row
    assert "agent:analyst" in row
    assert "maria" in body[body.index('<tr id="L1"') : body.index('<tr id="L2"')]
    # An older revision, and a line asked for, land on its row.
    assert client.get(f"/p/{project.slug}/f/{profile.pk}/blame/?r=1&line=1").status_code == 200
    assert client.get(f"/p/{project.slug}/f/{profile.pk}/blame/?r=9").status_code == 404


def test_blame_page_costs_the_same_queries_for_a_short_and_a_long_history(
    client, project, admin, story, django_assert_max_num_queries
):
    client.force_login(admin)
    profile = story["profile"]
    for number in range(2, 12):
        store.file_append(file=profile, addition=f"- fact {number}\n", actor=Actor.person(admin))
    with django_assert_max_num_queries(20):
        assert client.get(f"/p/{project.slug}/f/{profile.pk}/blame/").status_code == 200


def test_where_it_went_lists_the_sessions_and_exports_them(client, project, admin, story):
    client.force_login(admin)
    profile, session, later = story["profile"], story["session"], story["later"]
    page = client.get(f"/p/{project.slug}/f/{profile.pk}/carried/?r=2&line=1")
    assert page.status_code == 200
    body = page.content.decode()
    assert "- Name: Maria" in body
    for s in (session, later):
        assert f"/p/{project.slug}/sessions/{s.pk}/" in body
    assert "2 sessions" in body
    export = client.get(f"/p/{project.slug}/f/{profile.pk}/carried/?r=2&line=1&format=csv")
    rows = list(csv.reader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert rows[0][:4] == ["session", "agent", "person served", "started (UTC)"]
    assert {r[0] for r in rows[1:]} == {str(session.pk), str(later.pk)}
    assert all(r[2] == "maria" for r in rows[1:])
    # The agent's line went only to the session after it.
    agents_line = client.get(f"/p/{project.slug}/f/{profile.pk}/carried/?r=2&line=2").content.decode()
    listed = agents_line[agents_line.index("<tbody>") :]
    assert str(later.pk) in listed and str(session.pk) not in listed
    assert client.get(f"/p/{project.slug}/f/{profile.pk}/carried/?r=2&line=7").status_code == 404


def test_an_agents_revision_links_its_session_and_what_it_did_before_writing(client, project, admin, story):
    client.force_login(admin)
    profile, session = story["profile"], story["session"]
    body = client.get(f"/p/{project.slug}/f/{profile.pk}/r/2/").content.decode()
    assert f"/p/{project.slug}/sessions/{session.pk}/" in body
    assert body.index("crm_lookup") < body.index("calendar timed out")
    session_page = client.get(f"/p/{project.slug}/sessions/{session.pk}/").content.decode()
    writes = session_page[session_page.index('id="writes"') :]
    assert f"/p/{project.slug}/f/{profile.pk}/r/2/" in writes
    assert writes.index("crm_lookup") < writes.index("calendar timed out")


def test_prompt_lines_link_to_their_origin_as_of_the_sessions_receipt(client, project, admin, story):
    client.force_login(admin)
    profile, session, later = story["profile"], story["session"], story["later"]
    # Today the profile moves on; the session that received revision 1 still points there.
    store.file_append(file=profile, addition="- New fact\n", actor=Actor.person(admin))
    body = client.get(f"/p/{project.slug}/sessions/{session.pk}/").content.decode()
    origins = body[body.index('id="prompt-origins"') :]
    assert f"/p/{project.slug}/f/{profile.pk}/blame/?r=1&amp;line=1#L1" in origins
    assert "- Prefers calls before 10:00" not in origins
    later_body = client.get(f"/p/{project.slug}/sessions/{later.pk}/").content.decode()
    assert f"/p/{project.slug}/f/{profile.pk}/blame/?r=2&amp;line=2#L2" in later_body
    simulated = client.get(f"/p/{project.slug}/simulate/?agent=analyst&user=maria").content.decode()
    assert f"/p/{project.slug}/f/{profile.pk}/blame/?r=3&amp;line=3#L3" in simulated


def test_an_employee_sees_where_their_own_profile_came_from_and_nobody_elses(client, project, person, story):
    client.force_login(person)
    profile, session, ivans = story["profile"], story["session"], story["ivans"]
    blame_page = client.get(f"/p/{project.slug}/f/{profile.pk}/blame/")
    assert blame_page.status_code == 200
    body = blame_page.content.decode()
    assert f"/p/{project.slug}/sessions/{session.pk}/" in body  # the session served her
    assert "crm_lookup" in body
    simulated = client.get(f"/p/{project.slug}/simulate/?agent=analyst").content.decode()
    assert f"/p/{project.slug}/f/{profile.pk}/blame/?r=2&amp;line=2#L2" in simulated
    assert "/blame/" in simulated and "notes/oncall.md" in simulated
    oncall = MemoryFile.objects.get(project=project, path="notes/oncall.md")
    assert f"/f/{oncall.pk}/blame/" not in simulated  # the workspace is not hers to open
    assert client.get(f"/p/{project.slug}/f/{profile.pk}/carried/?r=2&line=2").status_code == 200
    for url in (f"/f/{ivans.pk}/blame/", f"/f/{ivans.pk}/carried/?r=1&line=1", f"/f/{oncall.pk}/blame/"):
        assert client.get(f"/p/{project.slug}{url}").status_code == 404


def test_an_employee_reads_an_agents_file_blame_without_other_peoples_sessions(
    client, project, agent, person, admin, story
):
    ivan = story["ivan"]
    soul = MemoryFile.objects.get(project=project, scope="agent", path="SOUL.md")
    agent.hook_policy = {"post": {"SOUL.md": {"modes": ["append"]}}}
    agent.save()
    ivans_session, _ = prehook.hook_pre(agent=agent, user=ivan)
    hooks.hook_event(session=ivans_session, kind="tool", payload={"name": "ivans_private_tool"})
    hooks.hook_post(
        session=ivans_session,
        writes=[hooks.WriteRequest(path="SOUL.md", mode="append", content="Be brief.\n")],
    )
    client.force_login(person)
    body = client.get(f"/p/{project.slug}/f/{soul.pk}/blame/").content.decode()
    assert "Be brief." in body and "in an agent session" in body
    assert str(ivans_session.pk) not in body and "ivans_private_tool" not in body
    carried = client.get(f"/p/{project.slug}/f/{soul.pk}/carried/?r=2&line=1").content.decode()
    assert str(ivans_session.pk) not in carried and str(story["session"].pk) in carried


def test_blame_pages_in_russian(client, project, admin, story):
    client.force_login(admin)
    client.cookies["django_language"] = "ru"
    profile = story["profile"]
    body = client.get(f"/p/{project.slug}/f/{profile.pk}/blame/", HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    assert "Откуда" in body
    carried = client.get(
        f"/p/{project.slug}/f/{profile.pk}/carried/?r=2&line=1", HTTP_ACCEPT_LANGUAGE="ru"
    ).content.decode()
    assert "Куда" in carried


def test_prompt_origins_cost_the_same_queries_for_few_and_many_files(client, project, admin, story):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(admin)
    url = f"/p/{project.slug}/simulate/?agent=analyst&user=maria"

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    few = queries()
    for n in range(12):
        store.file_create(
            project=project,
            scope="workspace",
            path=f"notes/n{n}.md",
            content=f"note {n}\n",
            actor=Actor.person(admin),
        )
    body = client.get(url).content.decode()
    assert body.count("/blame/?r=1&amp;line=1#L1") >= 13
    assert queries() == few


def test_a_merge_settled_in_the_editor_keeps_the_authors_of_the_lines_it_kept(
    client, project, admin, person, s3
):
    """Maria opened revision 1; meanwhile Olga replaced a line; Maria's text kept that line and
    added one after it. She takes her side in the editor: the line she kept is still revision
    1's (hers, as first written), not the merge's."""
    from projects.memory import blame

    maria = Actor.person(person)
    Membership.objects.filter(user=person, project=project).update(role="admin")
    notes = store.file_create(
        project=project, scope="workspace", path="notes/merge.md", content="a\nold rule\nb\n", actor=maria
    ).file
    store.file_save(file=notes, content="a\nnew rule\nb\n", actor=Actor.person(admin), base_revision=1)
    client.force_login(person)
    edit = f"/p/{project.slug}/f/{notes.pk}/edit/"
    yours = "a\nold rule\nwith an exception\nb\n"
    assert client.post(edit, {"content": yours, "base_revision": 1}).status_code == 409
    carried = {"merge_base": 1, "merge_head": 2, "your_text": yours}
    chosen = client.post(edit, {"action": "resolve", **carried, "hunk-0": "yours"})
    merged = chosen.context["form"].initial["content"]
    assert merged == yours
    saved = client.post(edit, {"content": merged, "base_revision": 2, **carried})
    assert saved.status_code == 302
    notes = MemoryFile.objects.select_related("head", "project").get(pk=notes.pk)
    assert notes.head.merged_base == 1
    assert [(line.text, line.origin.revision.number) for line in blame.blame(notes).lines] == [
        ("a", 1),
        ("old rule", 1),
        ("with an exception", 3),
        ("b", 1),
    ]
