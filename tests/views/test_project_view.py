"""views/base.py's project_view: the prologue every project page shares (sign-in, the method,
the project and the role, the capability) and what a refusal the view leaves to it becomes
(a message and a redirect after a POST, a page with 503 otherwise)."""

import pytest
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.http import HttpResponse
from django.urls import path, reverse

from memoryadmin.urls import urlpatterns as console_urls
from projects.audit import Actor
from projects.governance import permissions
from projects.memory import errors, reading, store
from projects.models import Membership
from projects.views.base import on_refusal_show, project_view

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

REFUSAL = "The storage did not answer; nothing was changed."


@project_view(capability=permissions.can_manage)
def managed_view(request, project, role):
    if request.method == "POST":
        raise errors.StorageUnavailable(REFUSAL)
    return HttpResponse(f"{project.slug} {role}")


@project_view(methods=("POST",), refused_to="projects:file_detail")
def nested_view(request, project, role, file_id, number):
    raise errors.StorageUnavailable(REFUSAL)


@project_view(methods=("POST",))
def post_only_view(request, project, role):
    raise errors.StorageUnavailable(REFUSAL)


@project_view()
def reading_view(request, project, role):
    raise errors.StorageUnavailable(REFUSAL)


@project_view()
def own_page_view(request, project, role):
    context = {"project": project, "role": role}
    with on_refusal_show("projects/session_list.html", context):
        raise errors.StorageUnavailable(REFUSAL)


urlpatterns = [
    path("t/<slug:slug>/managed/", managed_view, name="managed"),
    path("t/<slug:slug>/f/<uuid:file_id>/r/<int:number>/", nested_view, name="nested"),
    path("t/<slug:slug>/post-only/", post_only_view, name="post_only"),
    path("t/<slug:slug>/reading/", reading_view, name="reading"),
    path("t/<slug:slug>/own-page/", own_page_view, name="own_page"),
    *console_urls,
]


def _messages(answer) -> list[str]:
    return [str(m) for m in get_messages(answer.wsgi_request)]


def test_the_view_gets_the_project_and_the_role(client, project, admin):
    client.force_login(admin)
    page = client.get(reverse("managed", args=[project.slug]))
    assert page.status_code == 200 and page.content == b"incidents admin"


def test_a_missing_capability_is_the_same_404_as_an_unknown_project(client, project, person):
    client.force_login(person)  # an employee: not an admin
    refused = client.get(reverse("managed", args=[project.slug]))
    unknown = client.get(reverse("managed", args=["no-such-project"]))
    assert refused.status_code == unknown.status_code == 404


def test_a_project_the_person_is_not_in_is_a_404(client, make_project, admin):
    other = make_project(slug="tenders", name="Tenders")
    client.force_login(admin)  # an admin, of another project
    assert client.get(reverse("managed", args=[other.slug])).status_code == 404
    Membership.objects.create(user=admin, project=other, role="admin")
    assert client.get(reverse("managed", args=[other.slug])).status_code == 200


def test_anonymous_visitors_are_sent_to_sign_in_before_anything_is_looked_up(client, project):
    for url in (
        reverse("managed", args=[project.slug]),
        reverse("managed", args=["nope"]),
        reverse("post_only", args=[project.slug]),
    ):
        answer = client.get(url)
        assert answer.status_code == 302 and answer.url.startswith(reverse("login")), url


def test_a_method_the_page_does_not_take_is_a_405(client, project, admin):
    client.force_login(admin)
    answer = client.get(reverse("post_only", args=[project.slug]))
    assert answer.status_code == 405 and answer["Allow"] == "POST"


def test_a_refusal_after_a_post_is_a_message_and_the_page_again(client, project, admin):
    client.force_login(admin)
    url = reverse("managed", args=[project.slug])
    answer = client.post(url)
    assert answer.status_code == 302 and answer.url == url
    assert _messages(answer) == [REFUSAL]


def test_a_refusal_after_a_post_goes_to_the_page_the_form_belongs_to(client, project, admin):
    """refused_to takes as many of the URL's arguments as it needs: file_detail takes the slug
    and the file, not the revision number."""
    client.force_login(admin)
    file_id = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    answer = client.post(reverse("nested", args=[project.slug, file_id, 3]))
    assert answer.status_code == 302
    assert answer.url == reverse("projects:file_detail", args=[project.slug, file_id])
    assert _messages(answer) == [REFUSAL]


def test_a_refusal_after_a_post_to_a_post_only_url_goes_to_the_project(client, project, admin):
    client.force_login(admin)
    answer = client.post(reverse("post_only", args=[project.slug]), follow=True)
    assert answer.redirect_chain == [(reverse("projects:project_detail", args=[project.slug]), 302)]
    assert answer.status_code == 200 and REFUSAL in answer.content.decode()


def test_a_refusal_on_a_get_is_a_page_with_the_message_and_503(client, project, person):
    client.force_login(person)
    page = client.get(reverse("reading", args=[project.slug]))
    text = page.content.decode()
    assert page.status_code == 503 and REFUSAL in text
    assert reverse("projects:project_detail", args=[project.slug]) in text  # the way back
    assert "Try again" in text


def test_on_refusal_show_keeps_the_views_own_page(client, project, person):
    client.force_login(person)
    page = client.get(reverse("own_page", args=[project.slug]))
    text = page.content.decode()
    assert page.status_code == 503
    assert "Agent sessions" in text  # session_list.html, with the context the view had
    assert "Try again" not in text


def test_a_revision_page_keeps_its_tabs_when_storage_is_down(client, s3, project, admin):
    revision = store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="Hello.\n", actor=Actor.person(admin)
    )
    client.force_login(admin)
    cache.clear()  # the text the save kept in the cache: read from storage, which is down
    s3.proxy.down = True
    page = client.get(reverse("projects:revision_detail", args=[project.slug, revision.file_id, 1]))
    text = page.content.decode()
    assert page.status_code == 503 and "did not answer" in text
    assert reverse("projects:file_history", args=[project.slug, revision.file_id]) in text


def test_a_delete_refused_by_storage_says_so_on_the_files_page(client, s3, project, admin):
    revision = store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="Hello.\n", actor=Actor.person(admin)
    )
    client.force_login(admin)
    s3.proxy.down = True
    answer = client.post(
        reverse("projects:file_delete", args=[project.slug, revision.file_id]), {"base_revision": 1}
    )
    assert answer.status_code == 302
    assert answer.url == reverse("projects:file_detail", args=[project.slug, revision.file_id])
    assert "did not answer" in " ".join(_messages(answer))
    s3.proxy.down = False
    assert reading.file_read(revision.file).text == "Hello.\n"
