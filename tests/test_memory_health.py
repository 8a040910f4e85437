"""Memory health: duplicates, stale notes and contradictions found with their origins (blame),
risk still present, prompt stability; the pure measures tested without Django."""

import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from projects.audit import Actor
from projects.memory import store
from projects.memory.health import lines, stability
from projects.models import AuditEvent, Revision


@pytest.mark.db_independent
def test_lines_finds_exact_near_duplicates_and_contradictions():
    texts = [
        "# Notes",
        "- pool size 20 on db-2",
        "- Pool  size 20 on db-2",  # exact once normalised
        "- pool size 40 on db-2",  # contradiction: 20 / 40
        "- prefers Russian",
        "- prefers English",  # contradiction: Russian / English
        "- the auth service p99 is slow after every deploy on monday",
        "- the auth service p99 is slow after every deploy on mondays",  # near: spelling
        "- session 1: auth p99 801 ms",
        "- session 2: auth p99 802 ms",  # two values differ: neither
        "- is 20",
        "- was 20",  # function words are no subject
    ]
    found = {(p.first, p.second): p for p in lines.compare(texts)}
    assert found[(1, 2)].kind == "exact"
    assert (found[(1, 3)].kind, found[(1, 3)].subject, found[(1, 3)].values) == (
        "contradiction",
        "pool size",
        ("20", "40"),
    )
    assert found[(4, 5)].values == ("russian", "english")
    assert found[(6, 7)].kind == "near" and found[(6, 7)].similarity >= 0.8
    assert set(found) == {(1, 2), (1, 3), (4, 5), (6, 7)}
    assert lines.jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)


@pytest.mark.db_independent
def test_stable_prefix_counts_identical_bytes_from_the_first():
    assert stability.stable_prefix(b"abcdef", b"abcxyz") == 3
    assert stability.share("same", "same") == 1.0
    assert stability.share("x" * 10, "y" + "x" * 9) == 0.0
    assert stability.share("ab", "abcd") == 0.5


def _aged(revision, days):
    Revision.objects.filter(pk=revision.pk).update(created_at=timezone.now() - dt.timedelta(days=days))


@pytest.mark.django_db
def test_memory_health_json_reports_each_finding_with_its_origins(
    s3, client, project, agent, person, admin, reviewer
):
    maria, olga = Actor.person(person), Actor.person(admin)
    first = store.file_create(
        project=project,
        scope="workspace",
        path="notes/auth.md",
        content="- db-2 pool size 20 connections\n- restart the api after a deploy\n",
        actor=maria,
    )
    _aged(first, 60)  # the first two notes are two months old: stale (30 days by default)
    store.file_append(
        file=first.file,
        addition="- db-2 pool size 40 connections\n- Restart the API after a deploy\n",
        actor=olga,
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="- prefers Russian\n- mail maria@example.com\n- prefers English\n",
        actor=maria,
    )
    out = io.StringIO()
    call_command("memory_health", "--project", project.slug, "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["settings"]["similarity"] == "token-set Jaccard"
    totals = report["totals"]
    assert (totals["exact_duplicates"], totals["contradictions"], totals["stale_notes"]) == (1, 2, 2)
    assert totals["personal_data"] == 1
    duplicate = report["duplicates"][0]
    assert [(line["line"], line["origin"]["author"]) for line in duplicate["lines"]] == [
        (2, "maria"),
        (4, "olga"),
    ]
    pool = next(c for c in report["contradictions"] if c["subject"] == "db-2 pool size")
    assert pool["values"] == ["20", "40"]
    assert [line["origin"]["revision"] for line in pool["lines"]] == [1, 2]
    assert [line["origin"]["author"] for line in pool["lines"]] == ["maria", "olga"]
    language = next(c for c in report["contradictions"] if c["subject"] == "prefers")
    assert language["pool"] == "user:maria" and language["values"] == ["russian", "english"]
    assert [s["line"] for s in report["stale"]["notes"]] == [1, 2]
    assert all(s["age_days"] >= 59 and s["origin"]["author"] == "maria" for s in report["stale"]["notes"])
    text = io.StringIO()
    call_command("memory_health", "--project", project.slug, stdout=text)
    assert "duplicates 1 exact, 0 near\tcontradictions 2\tstale notes 2" in text.getvalue()
    # The page shows the same, to compliance and admins only.
    client.force_login(reviewer)
    page = client.get(reverse("projects:memory_health", args=[project.slug]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "db-2 pool size" in body and "r2 of workspace/notes/auth.md by olga" in body
    assert body.count('class="prompt-chart"') == 4  # size and stability, over 30 and 90 days
    assert AuditEvent.objects.filter(action="read.health", actor_user=reviewer).count() == 2  # files quoted
    # A project sets its own stale age on its settings page.
    client.force_login(admin)
    settings_url = reverse("projects:project_settings", args=[project.slug])
    assert 'name="stale_days"' in client.get(settings_url).content.decode()
    client.post(settings_url, {"name": project.name, "description": "", "stale_days": "90"})
    out = io.StringIO()
    call_command("memory_health", "--project", project.slug, "--json", stdout=out)
    later = json.loads(out.getvalue())
    assert later["settings"]["stale_days"] == 90 and later["totals"]["stale_notes"] == 0
    client.force_login(person)
    assert client.get(reverse("projects:memory_health", args=[project.slug])).status_code in (403, 404)
