"""Search across a project's memory: current files, optionally history, with highlighted
matches; PostgreSQL full-text on the PostgreSQL run, LIKE on SQLite."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from projects.audit import Actor
from projects.memory import removal, search, store
from projects.models import AuditEvent, SearchText
from projects.rendering import highlighted

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(s3, project, agent, person, make_project):
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You analyse incidents calmly.\n",
        actor=system,
    )
    profile = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Мария prefers the tender deadline in UTC.\n",
        actor=Actor.person(person),
    )
    store.file_save(
        file=profile.file,
        content="Мария prefers short reports.\n",
        actor=Actor.person(person),
        base_revision=1,
    )
    store.file_create(
        project=project,
        scope="workspace",
        path="tenders/2026.md",
        content="The tender deadline moved to Friday <script>x</script>.\n",
        actor=system,
    )
    other = make_project(slug="elsewhere")
    store.file_create(
        project=other,
        scope="workspace",
        path="secret.md",
        content="tender deadline of another project\n",
        actor=system,
    )
    return profile


def test_current_files_match_every_word_and_other_projects_never(memory, project):
    hits = list(search.search_memory(project=project, query="tender deadline"))
    assert [h.file.display_path for h in hits] == ["workspace/tenders/2026.md"]
    assert list(search.search_memory(project=project, query="deadline nowhere")) == []


def test_history_finds_old_revisions(memory, project):
    hits = list(search.search_memory(project=project, query="tender deadline", history=True))
    assert sorted((h.file.display_path, h.number, h.is_head) for h in hits) == [
        ("users/maria/USER.md", 1, False),
        ("workspace/tenders/2026.md", 1, True),
    ]


def test_russian_words_match(memory, project):
    [hit] = search.search_memory(project=project, query="мария")
    assert hit.file.path == "USER.md" and hit.is_head


def test_highlight_escapes_and_marks():
    html = highlighted(search.excerpt("Before <b>deadline</b> and Deadline.", ["deadline"]))
    assert html == "Before &lt;b&gt;<mark>deadline</mark>&lt;/b&gt; and <mark>Deadline</mark>."


def test_search_page_highlights_links_and_audits(client, memory, project, reviewer):
    client.force_login(reviewer)
    url = reverse("projects:search", args=[project.slug])
    response = client.get(url, {"q": "deadline"})
    html = response.content.decode()
    assert "<mark>deadline</mark>" in html and "&lt;script&gt;" in html and "<script>x" not in html
    assert "elsewhere" not in html
    event = AuditEvent.objects.get(action="read.search")
    assert event.details == {"query": "deadline", "history": False, "results": 1}
    old = client.get(url, {"q": "UTC", "history": "1"}).content.decode()
    assert reverse("projects:revision_detail", args=[project.slug, memory.file_id, 1]) in old


def test_search_page_bad_and_empty_queries(client, memory, project, reviewer):
    client.force_login(reviewer)
    url = reverse("projects:search", args=[project.slug])
    assert client.get(url, {"q": "!!!"}).status_code == 400
    assert "Nothing matches" in client.get(url, {"q": "zebra"}).content.decode()
    assert client.get(url).status_code == 200


def test_search_query_count_does_not_grow_with_matches(client, s3, project, reviewer):
    client.force_login(reviewer)
    url = reverse("projects:search", args=[project.slug])

    def count():
        with CaptureQueriesContext(connection) as queries:
            client.get(url, {"q": "incident"})
        return len(queries)

    for n in range(2):
        store.file_create(
            project=project,
            scope="workspace",
            path=f"a{n}.md",
            content=f"incident {n}\n",
            actor=Actor.system("t"),
        )
    few = count()
    for n in range(2, 20):
        store.file_create(
            project=project,
            scope="workspace",
            path=f"a{n}.md",
            content=f"incident {n}\n",
            actor=Actor.system("t"),
        )
    assert count() == few


def test_deleting_a_file_drops_it_from_current_search(memory, project):
    [hit] = search.search_memory(project=project, query="Friday")
    file = hit.file
    removal.file_delete(file=file, actor=Actor.system("t"), base_revision=1)
    assert list(search.search_memory(project=project, query="Friday")) == []
    assert len(search.search_memory(project=project, query="Friday", history=True)) == 1


def test_index_search_rebuilds_from_s3(memory, project):
    SearchText.objects.all().delete()
    out = StringIO()
    call_command("index_search", "--project", project.slug, stdout=out)
    assert "indexed 3 file(s)" in out.getvalue()
    assert len(search.search_memory(project=project, query="tender deadline")) == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the GIN index is PostgreSQL's")
def test_postgresql_search_uses_the_full_text_index(memory, project):
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        sql, params = search.fulltext_match(SearchText.objects.all(), ["deadline"]).query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET enable_seqscan = on")
    assert "projects_searchtext_fts" in plan, plan


def test_yo_and_ye_are_one_letter_to_search(memory, project, s3):
    """Russian writes "ёжик" and "ежик" alike: either finds the other, on PostgreSQL (full-text,
    through its index expression) and on SQLite (the scan), and the excerpt marks the word."""
    file = store.file_create(
        project=project,
        scope="workspace",
        path="notes/hedgehog.md",
        content="Ёжик в тумане: ёлка у входа.\n",
        actor=Actor.system("t"),
    ).file
    for query in ("ежик", "ЁЖИК", "Елка ежик"):
        hits = list(search.search_memory(project=project, query=query))
        assert [h.file_id for h in hits] == [file.pk], query
    assert list(search.search_memory(project=project, query="ежики")) == []
    html = highlighted(search.excerpt("Ёжик в тумане", search.search_terms("ежик")))
    assert html == "<mark>Ёжик</mark> в тумане"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner")
def test_the_folded_search_can_use_its_index(memory, project):
    texts = search.fulltext_match(SearchText.objects.all(), ["ежик"])
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        plan = texts.explain()
        cursor.execute("SET enable_seqscan = on")
    assert "projects_searchtext_fts" in plan
