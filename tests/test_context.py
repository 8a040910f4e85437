"""runners.context: the files a manifest draws from, now or at a past moment, and the one
path from records to a prompt."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from projects.audit import Actor
from projects.memory import store
from projects.models import MemoryFile, Revision
from projects.runners import context, injection

pytestmark = pytest.mark.django_db


@pytest.fixture
def files(s3, project, agent, person):
    system = Actor.system("t")
    store.file_create(
        project=project,
        scope=MemoryFile.Scope.AGENT,
        agent=agent,
        path="SOUL.md",
        content="Calm.\n",
        actor=system,
    )
    store.file_create(
        project=project,
        scope=MemoryFile.Scope.USER,
        user=person,
        path="USER.md",
        content="Maria.\n",
        actor=Actor.person(person),
    )
    for path in ("decisions/a.md", "decisions/old/b.md", "incidents/c.md"):
        store.file_create(
            project=project, scope=MemoryFile.Scope.WORKSPACE, path=path, content=f"{path}\n", actor=system
        )
    return project


def test_sections_get_their_files_with_paths_as_the_agent_sees_them(files, agent, person):
    manifest = injection.parse_manifest(
        {
            "sections": [
                {"tag": "agent_identity", "source": "SOUL.md"},
                {"tag": "user_profile", "source": "USER.md"},
                {"tag": "decisions", "source": "workspace/decisions/*.md"},
            ]
        }
    )
    found, overlaps = context.context_files(agent=agent, user=person, manifest=manifest)
    assert [f.path for f in found["agent_identity"]] == ["SOUL.md"]
    assert [f.path for f in found["user_profile"]] == ["USER.md"]
    assert [(f.path, f.text) for f in found["decisions"]] == [
        ("workspace/decisions/a.md", "decisions/a.md\n")
    ]


def test_without_a_user_there_is_no_profile(files, agent):
    assembly = context.build_context(agent=agent, user=None)
    assert "<user_profile>" not in assembly.prompt and "Calm." in assembly.prompt


def test_a_past_moment_sees_the_revisions_of_that_moment(files, agent, person):
    profile = MemoryFile.objects.select_related("head", "project").get(path="USER.md")
    before = timezone.now()
    Revision.objects.filter(file=profile).update(created_at=before - dt.timedelta(hours=1))
    store.file_save(file=profile, content="Maria, moved.\n", actor=Actor.person(person), base_revision=1)
    then = context.build_context(agent=agent, user=person, at=before)
    now = context.build_context(agent=agent, user=person)
    assert "Maria.\n" in then.prompt and "moved" not in then.prompt
    assert "Maria, moved." in now.prompt


@pytest.mark.parametrize("raw", ["yesterday", "2026-13-40T00:00", "12/01/2026"])
def test_a_moment_typed_wrong_is_refused_clearly(raw):
    with pytest.raises(ValidationError, match="2026-12-04 11:45"):
        context.parse_moment(raw)


def test_a_moment_without_a_zone_is_utc():
    assert context.parse_moment("2026-12-01T09:00").tzinfo == dt.UTC
    assert context.parse_moment("") is None
