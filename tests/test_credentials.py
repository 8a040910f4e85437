"""Runner S3 credentials: issued through the store's IAM API, enforced by the store itself.

Every check is a real signed request to SeaweedFS with the runner's own keys."""

import json
import urllib.parse
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from django.urls import reverse

from projects.audit import Actor
from projects.memory import layout, store
from projects.models import Agent, AuditEvent, Membership, RunnerCredential, default_hook_policy
from projects.runners import bearer, credentials
from projects.runners.agent_settings import agent_settings_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def runner_token(agent, admin):
    token, _raw = bearer.token_create(agent=agent, name="prod runner", created_by=admin)
    return token


@pytest.fixture
def two_projects(s3, project, agent, person, make_project):
    """This project's memory, and another project's, both in the bucket."""
    system = Actor.system("test")
    for name in ("SOUL.md", "AGENTS.md"):
        store.file_create(
            project=project, scope="agent", agent=agent, path=name, content=f"{name} text\n", actor=system
        )
    store.file_create(
        project=project, scope="user", user=person, path="USER.md", content="Maria\n", actor=system
    )
    mine = store.file_create(
        project=project, scope="workspace", path="notes/a.md", content="a\n", actor=system
    )
    other = make_project(slug="other")
    theirs = store.file_create(
        project=other, scope="workspace", path="secret.md", content="other project's\n", actor=system
    )
    return {"mine": mine.file, "theirs": theirs.file, "other": other}


def _client(s3, credential_key: str, secret: str):
    return boto3.client(
        "s3",
        endpoint_url=s3.direct_url,
        region_name="us-east-1",
        aws_access_key_id=credential_key,
        aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1}),
    )


def _code(call) -> str:
    try:
        call()
    except ClientError as exc:
        return exc.response["Error"]["Code"]
    return "OK"


def test_runner_credentials_reach_only_their_own_prefix(
    s3, project, agent, admin, runner_token, two_projects, person
):
    other_agent = Agent.objects.create(project=project, slug="other-agent", name="Other")
    scratch_session = uuid.uuid4()
    s3.put(f"{layout.session_prefix(project.prefix, agent.pk, scratch_session)}x.md", b"mine")
    other_scratch = f"{layout.session_prefix(project.prefix, other_agent.pk, uuid.uuid4())}x.md"
    s3.put(other_scratch, b"theirs")
    credential, secret = credentials.credentials_issue(token=runner_token, by=admin)
    runner = _client(s3, credential.access_key_id, secret)
    prefix, bucket = project.prefix, s3.bucket
    get = lambda key: lambda: runner.get_object(Bucket=bucket, Key=key)["Body"].read()  # noqa: E731
    put = lambda key: lambda: runner.put_object(Bucket=bucket, Key=key, Body=b"x")  # noqa: E731
    listing = lambda p: lambda: runner.list_objects_v2(Bucket=bucket, Prefix=p)  # noqa: E731
    snapshot = two_projects["mine"].head.snapshot_key
    outcomes = {
        "read own agent file": _code(get(f"{prefix}agents/{agent.pk}/SOUL.md")),
        "read own workspace": _code(get(two_projects["mine"].key)),
        "list own workspace": _code(listing(f"{prefix}workspace/")),
        "write own workspace (policy: replace, no approval)": _code(put(f"{prefix}workspace/new.md")),
        "write own session scratch": _code(
            put(f"{layout.session_prefix(prefix, agent.pk, uuid.uuid4())}scratch.md")
        ),
        "read own session scratch": _code(
            get(f"{layout.agent_sessions_prefix(prefix, agent.pk)}{scratch_session}/x.md")
        ),
        "write another agent's session scratch": _code(
            put(f"{layout.session_prefix(prefix, other_agent.pk, uuid.uuid4())}scratch.md")
        ),
        "read another agent's session scratch": _code(get(other_scratch)),
        "list another agent's sessions": _code(listing(layout.agent_sessions_prefix(prefix, other_agent.pk))),
        "write scratch outside any agent": _code(put(f"{prefix}sessions/x/scratch.md")),
        "read a profile (USER.md)": _code(get(layout.user_file_key(prefix, person.pk))),
        "list the profiles": _code(listing(layout.users_root(prefix))),
        "write a profile": _code(put(layout.user_file_key(prefix, person.pk))),
        "write AGENTS.md (policy: append with approval)": _code(put(f"{prefix}agents/{agent.pk}/AGENTS.md")),
        "write SOUL.md (not in the policy)": _code(put(f"{prefix}agents/{agent.pk}/SOUL.md")),
        "read _history/": _code(get(snapshot)),
        "list _history/": _code(listing(f"{prefix}_history/")),
        "write _history/": _code(put(snapshot)),
        "read another project": _code(get(two_projects["theirs"].key)),
        "write another project": _code(put(two_projects["theirs"].key)),
        "list another project": _code(listing(two_projects["other"].prefix)),
        "list the bucket root": _code(listing("")),
        "list projects/ (every project)": _code(listing("projects/")),
        "delete own workspace": _code(
            lambda: runner.delete_object(Bucket=bucket, Key=two_projects["mine"].key)
        ),
    }
    print(outcomes)
    assert outcomes == {
        "read own agent file": "OK",
        "read own workspace": "OK",
        "list own workspace": "OK",
        "write own workspace (policy: replace, no approval)": "OK",
        "write own session scratch": "OK",
        "read own session scratch": "OK",
        "write another agent's session scratch": "AccessDenied",
        "read another agent's session scratch": "AccessDenied",
        "list another agent's sessions": "AccessDenied",
        "write scratch outside any agent": "AccessDenied",
        "read a profile (USER.md)": "AccessDenied",
        "list the profiles": "AccessDenied",
        "write a profile": "AccessDenied",
        "write AGENTS.md (policy: append with approval)": "AccessDenied",
        "write SOUL.md (not in the policy)": "AccessDenied",
        "read _history/": "AccessDenied",
        "list _history/": "AccessDenied",
        "write _history/": "AccessDenied",
        "read another project": "AccessDenied",
        "write another project": "AccessDenied",
        "list another project": "AccessDenied",
        "list the bucket root": "AccessDenied",
        "list projects/ (every project)": "AccessDenied",
        "delete own workspace": "AccessDenied",
    }
    assert s3.get(two_projects["theirs"].key) == b"other project's\n"
    event = AuditEvent.objects.get(action="credentials.issue")
    assert event.details["access_key_id"] == credential.access_key_id
    assert secret not in str(event.details)


def test_revoking_the_token_revokes_its_credentials(s3, admin, runner_token, two_projects):
    credential, secret = credentials.credentials_issue(token=runner_token, by=admin)
    runner = _client(s3, credential.access_key_id, secret)
    key = two_projects["mine"].key
    assert _code(lambda: runner.get_object(Bucket=s3.bucket, Key=key)) == "OK"
    bearer.token_revoke(token=runner_token, by=admin)
    assert _code(lambda: runner.get_object(Bucket=s3.bucket, Key=key)) == "InvalidAccessKeyId"
    assert RunnerCredential.objects.get(pk=credential.pk).revoked_at is not None
    assert credentials.iam_user_name(runner_token) not in [
        u["UserName"] for u in s3.iam.list_users()["Users"]
    ]
    assert [e.action for e in AuditEvent.objects.order_by("seq")][-2:] == [
        "token.revoke",
        "credentials.revoke",
    ]


def test_issuing_again_rotates_the_key(s3, admin, runner_token, two_projects):
    first, first_secret = credentials.credentials_issue(token=runner_token, by=admin)
    second, second_secret = credentials.credentials_issue(token=runner_token, by=admin)
    key = two_projects["mine"].key
    assert first.access_key_id != second.access_key_id
    old = _client(s3, first.access_key_id, first_secret)
    new = _client(s3, second.access_key_id, second_secret)
    assert _code(lambda: old.get_object(Bucket=s3.bucket, Key=key)) == "InvalidAccessKeyId"
    assert _code(lambda: new.get_object(Bucket=s3.bucket, Key=key)) == "OK"
    assert list(RunnerCredential.objects.filter(revoked_at__isnull=True)) == [second]


def test_the_s3_policy_follows_the_hook_policy(s3, project, agent, admin, runner_token, two_projects):
    credential, secret = credentials.credentials_issue(token=runner_token, by=admin)
    runner = _client(s3, credential.access_key_id, secret)
    key = f"{project.prefix}workspace/notes/b.md"
    assert _code(lambda: runner.put_object(Bucket=s3.bucket, Key=key, Body=b"1")) == "OK"
    policy = dict(agent.hook_policy)
    policy["post"] = {"workspace/**.md": {"modes": ["append"], "approval": False}}
    agent_settings_update(agent=agent, by=admin, policy=policy)
    assert credentials.credentials_refresh(agent=Agent.objects.get(pk=agent.pk), by=admin) == 1
    assert _code(lambda: runner.put_object(Bucket=s3.bucket, Key=key, Body=b"2")) == "AccessDenied"
    assert s3.get(key) == b"1"


def test_no_profile_is_writable_directly_whatever_the_policy(s3, project, agent, admin, runner_token, person):
    # One set of credentials per agent cannot say "the session's person": it would reach
    # every member's USER.md. A profile goes through the hook, which knows whose it is.
    policy = dict(agent.hook_policy)
    policy["post"] = {**policy["post"], "USER.md": {"modes": ["replace"], "approval": False}}
    agent_settings_update(agent=agent, by=admin, policy=policy)
    credential, secret = credentials.credentials_issue(token=runner_token, by=admin)
    runner = _client(s3, credential.access_key_id, secret)
    key = layout.user_file_key(project.prefix, person.pk)
    assert _code(lambda: runner.put_object(Bucket=s3.bucket, Key=key, Body=b"x")) == "AccessDenied"


def test_a_lost_iam_answer_is_settled_by_trying_again(s3, admin, runner_token, two_projects):
    """CreateUser reached the store but its answer was lost: the retry reuses the user."""
    s3.proxy.inject("POST", r"^/", "lose", body_regex="Action=CreateUser")
    with pytest.raises(credentials.CredentialsUnavailable):
        credentials.credentials_issue(token=runner_token, by=admin)
    assert not RunnerCredential.objects.exists()
    s3.proxy.inject("POST", r"^/", "lose", body_regex="Action=DeleteUser")
    credential, secret = credentials.credentials_issue(token=runner_token, by=admin)
    runner = _client(s3, credential.access_key_id, secret)
    assert _code(lambda: runner.get_object(Bucket=s3.bucket, Key=two_projects["mine"].key)) == "OK"
    with pytest.raises(credentials.CredentialsUnavailable):  # DeleteUser's answer lost
        credentials.credentials_revoke(token=runner_token, by=admin)
    assert credentials.credentials_revoke(token=runner_token, by=admin) == 1
    assert (
        _code(lambda: runner.get_object(Bucket=s3.bucket, Key=two_projects["mine"].key))
        == "InvalidAccessKeyId"
    )


def test_admins_issue_and_delete_credentials_on_the_settings_page(
    client, s3, project, agent, admin, runner_token, make_user
):
    client.force_login(admin)
    issue = reverse("projects:credentials_issue", args=[project.slug, agent.slug, runner_token.pk])
    page = client.get(client.post(issue).url).content.decode()
    assert "MGC_RUNNER_S3_SECRET_ACCESS_KEY=" in page
    again = client.get(reverse("projects:agent_settings", args=[project.slug, agent.slug]))
    assert "MGC_RUNNER_S3_SECRET_ACCESS_KEY=" not in again.content.decode()  # shown once
    credential = RunnerCredential.objects.get()
    assert credential.access_key_id in again.content.decode()
    employee = make_user("erin")
    Membership.objects.create(user=employee, project=project, role="employee")
    client.force_login(employee)
    assert client.post(issue).status_code == 404
    client.force_login(admin)
    client.post(reverse("projects:credentials_revoke", args=[project.slug, agent.slug, runner_token.pk]))
    assert RunnerCredential.objects.get().revoked_at is not None


def test_names_the_console_refuses_are_denied_where_the_store_takes_deny(s3, agent, admin, runner_token):
    """SeaweedFS takes only Allow statements ("Only 'Allow' is possible"): the credentials are
    issued with the policy minus its Deny statement, and the record says which was attached.
    Stores that take Deny (AWS, MinIO, Ceph) get it."""
    wanted = credentials.runner_policy(agent)  # the default policy: logs append-only
    denies = {s["Sid"]: s for s in wanted["Statement"] if s["Effect"] == "Deny"}
    prefix, bucket = agent.project.prefix, agent.project.bucket_name
    deny = denies["DenyNamesTheConsoleRefuses"]
    assert deny["Action"] == ["s3:PutObject"]
    assert f"arn:aws:s3:::{bucket}/{prefix}workspace/*/.*" in deny["Resource"]
    # workspace/**.md is granted around the stricter append-only logs, denied by key pattern
    [granted] = [s for s in wanted["Statement"] if s["Sid"] == "WriteWhatTheHookPolicyAllows"]
    assert granted["Resource"] == [f"arn:aws:s3:::{bucket}/{prefix}workspace/*.md"]
    assert denies["DenyWhatStricterRulesGovern"] == {
        "Sid": "DenyWhatStricterRulesGovern",
        "Effect": "Deny",
        "Action": ["s3:PutObject"],
        "Resource": [f"arn:aws:s3:::{bucket}/{prefix}workspace/logs/*.md"],
    }
    credential, _secret = credentials.credentials_issue(token=runner_token, by=admin)
    assert not credentials.has_deny(credential.policy)
    assert credential.policy == credentials.runner_policy(agent, deny=False)
    attached = s3.iam.get_user_policy(UserName=credential.iam_user, PolicyName=credentials.POLICY_NAME)[
        "PolicyDocument"
    ]
    if isinstance(attached, str):  # botocore decodes it; a plain string on older versions
        attached = json.loads(urllib.parse.unquote(attached))
    assert not credentials.has_deny(attached)


def test_settings_and_isolation_pages_say_exactly_what_the_credentials_reach(
    client, s3, project, agent, admin, runner_token
):
    agent.hook_policy = {
        "post": {
            "workspace/**.md": {"modes": ["replace"], "approval": False},
            "workspace/secret/*.md": {"modes": ["replace"], "approval": True},
            "TOOLS.md": {"modes": ["replace"], "approval": False},
        }
    }
    agent.save()
    credentials.credentials_issue(token=runner_token, by=admin)
    client.force_login(admin)
    prefix = project.prefix
    for url in (
        reverse("projects:agent_settings", args=[project.slug, agent.slug]),
        reverse("projects:isolation", args=[project.slug]),
    ):
        text = client.get(url).content.decode()
        assert f"<code>{layout.agent_sessions_prefix(prefix, agent.pk)}</code>" in text
        assert f"<code>{layout.agent_file_key(prefix, agent.pk, 'TOOLS.md')}</code>" in text
        assert f"<code>{prefix}workspace/*.md</code>" in text  # granted around the stricter rule
        assert "except what the stricter workspace/secret/*.md governs:" in text
        assert f"<code>{prefix}workspace/secret/*.md</code>" in text
        assert "not denied by this store (it takes no Deny statements)" in text  # SeaweedFS
        assert "a direct write found there that the stricter rule does not allow is refused" in text
        assert "profiles (USER.md reaches a runner only through the pre hook" in text
        assert "read-only; it writes only session scratch" not in text
    response = client.post(
        reverse("projects:agent_settings", args=[project.slug, agent.slug]),
        {"which": "policy_json", "policy-json-value": json.dumps(agent.hook_policy)},
        follow=True,
    )
    notes = [str(m) for m in response.context["messages"]]
    assert any("Updated the S3 policy of 1 runner" in note for note in notes), notes


def test_the_settings_page_says_whether_the_agent_can_rewrite_its_logs_and_when_s3_lags(
    client, s3, project, agent, admin, runner_token
):
    policy = default_hook_policy()
    policy["post"] = {k: v for k, v in policy["post"].items() if k != "workspace/logs/**.md"}
    agent.hook_policy = policy  # the default before migration 0033: logs rewritable
    agent.save()
    credentials.credentials_issue(token=runner_token, by=admin)
    client.force_login(admin)
    url = reverse("projects:agent_settings", args=[project.slug, agent.slug])
    text = client.get(url).content.decode()
    assert "This policy lets the agent rewrite its own log workspace/logs/tools.md (replace)" in text
    assert 'id="stale-credentials"' not in text
    agent.hook_policy = default_hook_policy()  # what migration 0033 does to an untouched agent
    agent.save()
    text = client.get(url).content.decode()
    assert "workspace/logs/tools.md is append-only for the agent" in text
    assert "workspace/logs/errors.md is append-only for the agent" in text
    assert "rewrite its own log" not in text
    # SeaweedFS takes no Deny: the S3 policy stays the same (workspace/*.md), and adoption
    # refuses a direct rewrite of a log (tests/test_refused_writes.py).
    assert 'id="stale-credentials"' not in text
    assert RunnerCredential.objects.get().policy == credentials.runner_policy(agent, deny=False)
