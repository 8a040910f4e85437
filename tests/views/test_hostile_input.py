"""Input from people and runners that once answered 500, was stored to break a page later, or
lost someone's change: agent settings, the merge's resolve step, new accounts, the runner API.
Each test fails on the code before its fix."""

import html
import json
import re

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import reading, store
from projects.models import Agent, MemoryFile
from projects.runners import bearer
from tests.conftest import reload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def settings_url(project, agent):
    return reverse("projects:agent_settings", args=[project.slug, agent.slug])


def _policy_rows(*rows, logs=("", "")) -> dict:
    data = {
        "which": "policy",
        "policy-rules-TOTAL_FORMS": str(len(rows)),
        "policy-rules-INITIAL_FORMS": "0",
        "policy-tool_log": logs[0],
        "policy-error_log": logs[1],
    }
    for index, (path, modes, approval) in enumerate(rows):
        data[f"policy-rules-{index}-path"] = path
        for mode in modes:
            data[f"policy-rules-{index}-{mode}"] = "on"
        data[f"policy-rules-{index}-approval"] = approval
    return data


def test_the_same_path_in_two_policy_rows_is_an_error_at_the_second(client, s3, admin, agent, settings_url):
    client.force_login(admin)
    before = Agent.objects.get(pk=agent.pk).hook_policy
    response = client.post(
        settings_url, _policy_rows(("USER.md", ["append"], "proposal"), ("USER.md", ["replace"], "direct"))
    )
    assert response.status_code == 400
    assert "This path has a rule already." in response.content.decode()
    assert Agent.objects.get(pk=agent.pk).hook_policy == before


def test_more_rules_than_the_limit_are_refused_in_both_editors(client, s3, admin, agent, settings_url):
    client.force_login(admin)
    rows = [(f"workspace/r{n}.md", ["append"], "direct") for n in range(51)]
    assert client.post(settings_url, _policy_rows(*rows)).status_code == 400
    policy = {"post": {f"workspace/r{n}.md": {"modes": ["append"]} for n in range(51)}}
    raw = client.post(settings_url, {"which": "policy_json", "policy-json-value": json.dumps(policy)})
    assert raw.status_code == 400
    assert "At most 50 write rules." in raw.content.decode()


def test_an_empty_policy_is_a_value_not_a_missing_one(client, s3, admin, agent, settings_url):
    client.force_login(admin)
    response = client.post(settings_url, {"which": "policy_json", "policy-json-value": "{}"})
    assert response.status_code == 302
    assert Agent.objects.get(pk=agent.pk).hook_policy == {}
    empty = client.post(settings_url, {"which": "policy_json", "policy-json-value": ""})
    assert empty.status_code == 400


@pytest.mark.parametrize(
    "which, value",
    [
        # A \udXXX escape decodes to half a character, which no page, row or object can hold.
        ("policy_json", '{"post": {"workspace/\\udc80.md": {"modes": ["append"]}}}'),
        ("manifest_json", '{"sections": [{"tag": "a", "source": "workspace/\\ud800.md"}]}'),
        # Nesting that exhausts the stack while it is parsed or encoded again.
        ("manifest_json", "[" * 50_000 + "]" * 50_000),
        ("policy_json", '{"post": ' * 200 + "{}" + "}" * 200),
        # Numbers beyond any database integer (and any model's window).
        (
            "manifest_json",
            json.dumps({"sections": [{"tag": "a", "source": "SOUL.md"}], "total_tokens": 10**30}),
        ),
        ("manifest_json", json.dumps({"sections": [{"tag": "a", "source": "SOUL.md", "max_tokens": 2**31}]})),
        # A tag with a final newline, which `$` let through.
        (
            "manifest_json",
            json.dumps(
                {
                    "sections": [
                        {"tag": "user_profile\n", "source": "SOUL.md"},
                        {"tag": "user_profile", "source": "USER.md"},
                    ]
                }
            ),
        ),
        # Globs that would be saved and silently match nothing.
        ("manifest_json", json.dumps({"sections": [{"tag": "a", "source": "workspace/./x.md"}]})),
        ("manifest_json", json.dumps({"sections": [{"tag": "a", "source": "workspace/.md"}]})),
        ("manifest_json", json.dumps({"sections": [{"tag": "a", "source": "workspace/\u200bx.md"}]})),
        ("policy_json", json.dumps({"post": {"workspace/a\nb.md": {"modes": ["append"]}}})),
        ("policy_json", json.dumps({"post": {"workspace/" + "a" * 100_000 + ".md": {"modes": ["append"]}}})),
    ],
)
def test_raw_json_the_console_cannot_hold_is_refused_and_the_pages_keep_working(
    client, s3, admin, agent, person, settings_url, which, value
):
    client.force_login(admin)
    before = Agent.objects.get(pk=agent.pk)
    response = client.post(settings_url, {"which": which, f"{which.replace('_', '-')}-value": value})
    assert response.status_code == 400
    after = Agent.objects.get(pk=agent.pk)
    assert (after.manifest, after.hook_policy) == (before.manifest, before.hook_policy)
    assert client.get(settings_url).status_code == 200
    _, raw = bearer.token_create(agent=agent, name="t", created_by=admin)
    pre = client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": person.username}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert pre.status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        '{"user": "\\udc80"}',
        '{"session": "\\ud800"}',
        '{"user": "maria", "session": ' + "[" * 30_000 + "]" * 30_000 + "}",
        '{"details": ' + "[" * 500 + "]" * 500 + "}",
    ],
)
def test_runner_api_bodies_the_console_cannot_hold_are_client_errors(client, s3, token, body):
    response = client.post(
        "/api/v1/hooks/pre", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert 400 <= response.status_code < 500, response.content[:300]
    assert response.json()["error"]["code"] in ("malformed_json", "invalid_request")


def test_a_post_hook_path_with_half_a_character_is_refused(client, s3, token):
    session = client.post(
        "/api/v1/hooks/pre", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    body = (
        '{"session": "%s", "writes": [{"path": "workspace/\\udc80.md", "mode": "append", '
        '"content": "x"}]}' % session
    )
    response = client.post(
        "/api/v1/hooks/post", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert [detail["loc"] for detail in error["details"]] == [["body", "writes", "0", "path"]]
    assert not MemoryFile.objects.filter(scope="workspace").exists()


# --- The merge's resolve step ---------------------------------------------------------------


@pytest.fixture
def conflicted(s3, project, person):
    """maria's USER.md: revision 1 is L1..L5; revision 2 (someone else) changed L1 and L4."""
    first = store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="L1\nL2\nL3\nL4\nL5\n",
        actor=Actor.person(person),
    )
    file = MemoryFile.objects.select_related("head", "project").get(pk=first.file_id)
    store.file_save(
        file=file,
        content="L1 theirs\nL2\nL3\nL4 theirs\nL5\n",
        actor=Actor.system("other tab"),
        base_revision=1,
    )
    return MemoryFile.objects.select_related("head", "project").get(pk=file.pk)


def _edit_url(file):
    return reverse("projects:file_edit", args=[file.project.slug, file.pk])


def test_keep_yours_with_browser_line_ends_keeps_their_change_elsewhere(client, person, conflicted):
    # Browsers send a hidden input's value with CRLF line ends.
    client.force_login(person)
    response = client.post(
        _edit_url(conflicted),
        {
            "action": "resolve",
            "merge_base": 1,
            "merge_head": 2,
            "your_text": "L1 mine\r\nL2 mine\r\nL3\r\nL4\r\nL5\r\n",
            "hunk-0": "yours",
        },
    )
    assert response.status_code == 200
    assert response.context["form"].initial["content"] == "L1 mine\nL2 mine\nL3\nL4 theirs\nL5\n"


def test_a_forged_change_number_is_ignored(client, person, conflicted):
    client.force_login(person)
    response = client.post(
        _edit_url(conflicted),
        {
            "action": "resolve",
            "merge_base": 1,
            "merge_head": 2,
            "your_text": "L1 mine\n",
            "hunk-\u00b2": "theirs",
            "hunk-\u0663": "theirs",
        },
    )
    assert response.status_code == 200
    # "²" and "٣" are digits to str.isdigit, not change numbers: the change stays unsettled,
    # both sides between the markers in the editor.
    editor = re.search(r'<textarea name="content"[^>]*>(.*?)</textarea>', response.content.decode(), re.S)[1]
    assert html.unescape(editor).strip("\n").splitlines() == [
        "<<<<<<< revision 2, by system: other tab",
        "L1 theirs",
        "L2",
        "L3",
        "L4 theirs",
        "L5",
        "=======",
        "L1 mine",
        ">>>>>>> your text",
    ]


def test_a_resolve_step_larger_than_a_file_is_refused_before_merging(client, person, conflicted, settings):
    client.force_login(person)
    response = client.post(
        _edit_url(conflicted),
        {
            "action": "resolve",
            "merge_base": 1,
            "merge_head": 2,
            "your_text": "x\n" * settings.MGC_MAX_FILE_BYTES,
        },
    )
    assert response.status_code == 400
    assert "Nothing was changed." in response.content.decode()
    assert reload_file(conflicted).head.number == 2


def test_a_markdown_heading_underline_is_not_a_conflict_marker(client, person, conflicted):
    client.force_login(person)
    mine = "Profile\n=======\n\nL1 mine\nL2\nL3\nL4\nL5\n"
    assert client.post(_edit_url(conflicted), {"content": mine, "base_revision": 1}).status_code == 409
    chosen = client.post(
        _edit_url(conflicted),
        {"action": "resolve", "merge_base": 1, "merge_head": 2, "your_text": mine, "hunk-0": "yours"},
    )
    form = chosen.context["form"]
    assert "<<<<<<<" not in form.initial["content"] and not form.initial["merging"]
    saved = client.post(
        _edit_url(conflicted), {"content": form.initial["content"], "base_revision": 2, "merging": "True"}
    )
    assert saved.status_code == 302
    assert reading.file_read(reload_file(conflicted)).text.startswith("Profile\n=======\n")


def test_a_resolve_post_to_a_new_files_editor_leaves_no_record(client, project, admin, s3):
    client.force_login(admin)
    url = reverse("projects:file_new", args=[project.slug]) + "?path=notes/ghost.md"
    response = client.post(url, {"action": "resolve", "merge_head": 1, "your_text": "x"})
    assert response.status_code == 404
    assert not MemoryFile.objects.filter(path="notes/ghost.md").exists()


# --- Accounts --------------------------------------------------------------------------------


def _new_account(client, project, username):
    return client.post(
        reverse("projects:member_invite", args=[project.slug]),
        {
            "account-username": username,
            "account-email": "",
            "account-first_name": "",
            "account-last_name": "",
            "account-role": "employee",
        },
    )


def test_a_new_username_is_stored_as_the_login_form_reads_it(client, project, admin):
    client.force_login(admin)
    response = _new_account(client, project, "ｎｉｎａ")  # full-width letters
    assert response.status_code == 200
    link = re.search(r'<code id="invite-link">([^<]+)</code>', response.content.decode())[1]
    client.logout()
    form = client.get(link, follow=True)
    client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "long enough pass 2026", "new_password2": "long enough pass 2026"},
    )
    assert (
        client.post(
            "/accounts/login/", {"username": "ｎｉｎａ", "password": "long enough pass 2026"}
        ).status_code
        == 302
    )


@pytest.mark.parametrize("name", ["MARIA", "ｍａｒｉａ", "m\u0430ria", "Maria"])
def test_a_username_that_reads_like_an_existing_one_is_refused(client, project, admin, person, name):
    client.force_login(admin)
    response = _new_account(client, project, name)
    assert response.status_code == 400
    assert "maria" in response.content.decode()
    assert get_user_count(person) == 1


def get_user_count(person) -> int:
    return type(person).objects.filter(username__iexact="maria").count()


def test_adding_a_member_finds_the_account_in_any_case(client, project, admin, make_user):
    nina = make_user("nina")
    client.force_login(admin)
    response = client.post(
        reverse("projects:members", args=[project.slug]), {"username": "NINA", "role": "employee"}
    )
    assert response.status_code == 302
    assert nina.memberships.filter(project=project).exists()


def test_the_add_member_form_posts_to_the_members_page_after_a_new_account_error(client, project, admin):
    client.force_login(admin)
    page = _new_account(client, project, "bad name!")
    assert page.status_code == 400
    action = reverse("projects:members", args=[project.slug])
    assert f'action="{action}" class="toolbar" id="member-add"' in page.content.decode()


def test_an_empty_append_makes_no_revision(client, s3, token, project, admin):
    store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="# A\n", actor=Actor.person(admin)
    )
    session = client.post(
        "/api/v1/hooks/pre", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    body = {"session": session, "writes": [{"path": "workspace/notes/a.md", "mode": "append", "content": ""}]}
    result = client.post(
        "/api/v1/hooks/post",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["results"][0]
    assert (result["status"], result["revision"], result["unchanged"]) == ("written", 1, True)
    assert MemoryFile.objects.get(path="notes/a.md").revisions.count() == 1


@pytest.mark.parametrize(
    "zone, query",
    [
        ("Europe/Moscow", {"since": "0001-01-01"}),
        ("Europe/Moscow", {"until": "0001-01-01T01:00"}),
        ("America/New_York", {"since": "9999-12-31T23:59"}),
        ("Europe/Moscow", {"since": "0001-01-01", "export": "csv"}),
    ],
)
def test_audit_filters_at_the_ends_of_the_calendar_are_form_errors(
    client, s3, reviewer, settings, zone, query
):
    # Valid moments in the console's time zone that cannot be moved to UTC for the query.
    settings.TIME_ZONE = zone
    client.force_login(reviewer)
    response = client.get("/audit/", query)
    assert response.status_code == 400
    assert "Pick a date between the years 2 and 9998." in response.content.decode()


def test_a_token_expiry_out_of_range_is_named_as_such(client, s3, project, agent, admin):
    client.force_login(admin)
    url = reverse("projects:token_create", args=[project.slug, agent.slug])
    page = client.post(url, {"name": "runner", "expires_in_days": str(10**30)}, follow=True)
    text = page.content.decode()
    assert "Expires in days" in text and "Give the token a name" not in text
    assert not agent.tokens.exists()


@pytest.mark.parametrize(
    "other", ["Notes/Runbook.md", "notes/runb\u043e\u043ek.md", "n\u043etes/runbook.md", "notes/RUNBOOK.md"]
)
def test_a_workspace_name_that_reads_like_an_existing_one_is_refused(
    client, s3, project, admin, token, other
):
    store.file_create(
        project=project,
        scope="workspace",
        path="notes/runbook.md",
        content="# Runbook\n",
        actor=Actor.person(admin),
    )
    client.force_login(admin)
    page = client.post(reverse("projects:workspace_new", args=[project.slug]), {"path": other})
    assert page.status_code == 400
    assert "reads the same as the existing notes/runbook.md" in page.content.decode()
    session = client.post(
        "/api/v1/hooks/pre", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    body = {
        "session": session,
        "writes": [{"path": f"workspace/{other}", "mode": "append", "content": "x\n"}],
    }
    result = client.post(
        "/api/v1/hooks/post",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["results"][0]
    assert result["status"] == "rejected" and "reads the same" in result["message"]
    assert MemoryFile.objects.filter(scope="workspace").count() == 1


def test_a_nul_character_in_a_console_query_is_a_400_and_in_a_comment_an_error(
    client, s3, project, admin, reviewer, workspace_file
):
    client.force_login(reviewer)
    assert client.get("/audit/", {"actor": "a\x00b"}).status_code == 400
    assert client.get(reverse("projects:search", args=[project.slug]), {"q": "x\x00y"}).status_code == 400
    client.force_login(admin)
    flag = client.post(
        reverse("projects:flag_create", args=[project.slug, workspace_file.pk]),
        {"number": "1", "comment": "bad\x00comment"},
        follow=True,
    )
    assert "Null characters are not allowed." in flag.content.decode()
    assert not workspace_file.flags.exists()


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_numbers_jsonb_cannot_hold_are_refused_in_the_api_and_in_settings(
    client, s3, token, admin, agent, settings_url, value
):
    session = client.post(
        "/api/v1/hooks/pre", "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()["session"]
    body = '{"session": "%s", "name": "t", "details": {"x": %s}}' % (session, value)
    response = client.post(
        "/api/v1/hooks/tool", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 400
    client.force_login(admin)
    manifest = '{"sections": [{"tag": "a", "source": "SOUL.md", "max_tokens": %s}]}' % value
    assert (
        client.post(settings_url, {"which": "manifest_json", "manifest-json-value": manifest}).status_code
        == 400
    )


@pytest.mark.parametrize(
    "moment, status, shown",
    [
        # Offsets PostgreSQL refuses (beyond ±15:59) are moved to UTC first: a moment like any.
        ("2026-06-01T09:00+16:00", 200, "as of 2026-05-31 17:00:00 UTC"),
        ("2026-06-01T09:00-20:00", 200, "as of 2026-06-02 05:00:00 UTC"),
        # Moments that overflow on the way to UTC are a form error.
        ("0001-01-01T00:00+14:00", 400, "Give the moment as 2026-12-04 11:45"),
        ("9999-12-31T23:59:59-14:00", 400, "Give the moment as 2026-12-04 11:45"),
    ],
)
def test_a_simulate_moment_at_the_edges_is_a_moment_or_a_form_error(
    client, s3, project, agent, admin, moment, status, shown
):
    client.force_login(admin)
    url = reverse("projects:simulate", args=[project.slug])
    response = client.get(url, {"agent": agent.slug, "at": moment})
    assert response.status_code == status
    assert shown in response.content.decode()


def test_no_profile_is_written_for_someone_who_left_the_project(client, s3, project, agent, person, token):
    from projects.models import Membership

    agent.hook_policy["post"]["USER.md"] = {"modes": ["append"], "approval": False}
    agent.save()
    session = client.post(
        "/api/v1/hooks/pre",
        json.dumps({"user": person.username}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["session"]
    Membership.objects.filter(user=person, project=project).delete()
    body = {
        "session": session,
        "writes": [{"path": "USER.md", "mode": "append", "content": "a new fact about her\n"}],
    }
    result = client.post(
        "/api/v1/hooks/post",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["results"][0]
    assert (result["status"], result["code"]) == ("rejected", "not_a_member")
    assert not MemoryFile.objects.filter(scope="user", user=person).exists()


def test_a_nul_in_the_folder_of_a_refused_new_file_is_not_a_500(client, s3, project, admin):
    client.force_login(admin)
    page = client.post(
        reverse("projects:workspace_new", args=[project.slug]), {"path": "bad name", "dir": "a\x00b"}
    )
    assert page.status_code == 400
    assert "the name must end with .md" in page.content.decode()
    assert not MemoryFile.objects.filter(project=project).exists()
