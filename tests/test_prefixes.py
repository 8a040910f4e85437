"""Project key prefixes: no project's keys may land among another's (same bucket)."""

import threading

import pytest
from django.contrib import admin as django_admin
from django.core.exceptions import ValidationError
from django.db import connection, connections
from django.test import RequestFactory
from django.urls import reverse

from projects.audit import Actor
from projects.governance import isolation, setup
from projects.memory import store
from projects.models import Project


def _refused(code: str, **fields) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Project.objects.create(**fields)
    assert info.value.code == code, info.value
    return info.value


@pytest.mark.parametrize("prefix", ["teams/a/", "teams/", "teams/a/sub/", "teams/a/workspace/"])
def test_a_prefix_equal_to_containing_or_inside_another_is_refused(db, prefix):
    first = Project.objects.create(slug="first", name="First", key_prefix="teams/a/")
    error = _refused("prefix_overlap", slug="second", name="Second", key_prefix=prefix)
    assert "first" in error.messages[0]
    assert list(Project.objects.values_list("slug", flat=True)) == [first.slug]


@pytest.mark.parametrize("prefix", ["projects/", "projects/x/"])
def test_prefixes_under_the_default_root_are_reserved(db, prefix):
    Project.objects.create(slug="plain", name="Plain")  # lives at projects/<id>/
    _refused("prefix_reserved", slug="p", name="P", key_prefix=prefix)


def test_the_prefix_of_another_projects_id_is_refused_even_spelled_out(db):
    plain = Project.objects.create(slug="plain", name="Plain")
    _refused("prefix_reserved", slug="copy", name="Copy", key_prefix=plain.prefix)
    _refused("prefix_reserved", slug="inside", name="In", key_prefix=f"{plain.prefix}workspace/")


def test_the_same_prefix_in_another_bucket_is_fine(db):
    Project.objects.create(slug="a", name="A", key_prefix="teams/a/")
    other = Project.objects.create(slug="b", name="B", key_prefix="teams/a/", bucket="b-bucket")
    assert other.prefix == "teams/a/"


def test_a_prefix_in_the_consoles_bucket_named_explicitly_still_overlaps(db, settings):
    Project.objects.create(slug="a", name="A", key_prefix="teams/a/")
    default = settings.STORAGES["memory"]["OPTIONS"]["bucket_name"]
    _refused("prefix_overlap", slug="b", name="B", key_prefix="teams/a/", bucket=default)


def test_changing_a_prefix_into_another_projects_is_refused(db):
    Project.objects.create(slug="a", name="A", key_prefix="teams/a/")
    b = Project.objects.create(slug="b", name="B", key_prefix="teams/b/")
    b.key_prefix = "teams/a/b/"
    with pytest.raises(ValidationError) as info:
        b.save()
    assert info.value.code == "prefix_overlap"
    assert Project.objects.get(pk=b.pk).key_prefix == "teams/b/"


def test_a_project_with_files_keeps_its_prefix_and_bucket(s3, make_project, make_user):
    project = make_project(key_prefix="teams/x/")
    store.file_create(
        project=project, scope="workspace", path="a.md", content="a\n", actor=Actor.person(make_user())
    )
    for field, value in (("key_prefix", "teams/y/"), ("bucket", "elsewhere")):
        moved = Project.objects.get(pk=project.pk)
        setattr(moved, field, value)
        with pytest.raises(ValidationError) as info:
            moved.save()
        assert info.value.code == "prefix_fixed"


def test_the_new_project_page_refuses_an_overlap_with_a_message(client, make_user, s3):
    boss = make_user("boss", is_superuser=True)
    client.force_login(boss)
    setup.project_create(by=boss, slug="legal", name="Legal", key_prefix="teams/legal/")
    response = client.post(
        reverse("projects:project_new"), {"slug": "clone", "name": "Clone", "key_prefix": "teams/legal/"}
    )
    assert response.status_code == 400
    assert b"overlaps project legal" in response.content
    assert not Project.objects.filter(slug="clone").exists()


def test_django_admin_shows_the_overlap_as_a_form_error(db, make_user):
    boss = make_user("boss", is_superuser=True, is_staff=True)
    Project.objects.create(slug="a", name="A", key_prefix="teams/a/")
    model_admin = django_admin.site._registry[Project]
    request = RequestFactory().post("/")
    request.user = boss
    form_class = model_admin.get_form(request)
    form = form_class(data={"slug": "b", "name": "B", "key_prefix": "teams/a/"})
    assert not form.is_valid()
    assert "overlaps project a" in str(form.errors)


def test_a_save_in_a_new_project_cannot_overwrite_another_projects_head(s3, make_project, make_user):
    """The finding: a second project at the first's prefix overwrote its head object."""
    actor = Actor.person(make_user())
    first = make_project(key_prefix="teams/one/")
    store.file_create(project=first, scope="workspace", path="plan.md", content="mine\n", actor=actor)
    with pytest.raises(ValidationError):
        make_project(key_prefix="teams/one/")
    assert s3.get("teams/one/workspace/plan.md") == b"mine\n"
    assert isolation.check_isolation() == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks are PostgreSQL's; the suite's second run uses it"
)
def test_two_overlapping_projects_created_at_once_one_is_refused():
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def create(slug: str, prefix: str) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[slug] = Project.objects.create(slug=slug, name=slug, key_prefix=prefix)
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            outcomes[slug] = exc
        finally:
            connections.close_all()

    for _round in range(5):
        Project.objects.all().delete()
        outcomes.clear()
        threads = [
            threading.Thread(target=create, args=("outer", "race/")),
            threading.Thread(target=create, args=("inner", "race/inner/")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        made = [o for o in outcomes.values() if isinstance(o, Project)]
        refused = [o for o in outcomes.values() if isinstance(o, ValidationError)]
        assert len(made) == 1 and len(refused) == 1, outcomes
        assert Project.objects.count() == 1
