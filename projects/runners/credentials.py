"""S3 credentials of agent runners: issued, refreshed and revoked through the object store's
IAM API (SeaweedFS and MinIO serve it on the S3 endpoint, AWS at its own), so the store itself
enforces each project's isolation, not only the console.

Each runner token can have one IAM user, `mgc-runner-<token id>`, carrying the policy of
`runner_policy` below: its project's prefix only, read-only where the agent's hook policy
allows no direct replace, never the `_history/` snapshots. Every IAM call here may be
repeated safely: a user that exists is reused, issuing again rotates the access key, and
deleting what is already gone counts as done, so an answer lost on the way back is settled by
trying again.
"""

from __future__ import annotations

import json
import logging
import re

from botocore.exceptions import BotoCoreError, ClientError
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.audit import Actor, audit_record
from projects.errors import Refusal
from projects.memory import iam, layout
from projects.memory.storage import iam_client
from projects.models import Agent, AgentToken, RunnerCredential
from projects.runners import injection

logger = logging.getLogger(__name__)

POLICY_NAME = "mgc-runner"


class CredentialsUnavailable(Refusal):
    """The IAM API did not answer properly; `message` says what to do."""

    code = "iam_unavailable"


def iam_user_name(token: AgentToken) -> str:
    return f"mgc-runner-{token.pk}"


def _failed(exc: Exception) -> CredentialsUnavailable:
    logger.warning("IAM request failed: %s", exc)
    return CredentialsUnavailable(_(
        "The object store's IAM API did not answer properly (%(error)s). Nothing is live that "
        "you were not shown; try again in a moment.") % {"error": _error_code(exc) or "no answer"})


def _error_code(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def _gone(exc: Exception) -> bool:
    return _error_code(exc) in {"NoSuchEntity", "NoSuchEntityException", "NotFound"}


def credentials_issue(*, token: AgentToken, by) -> tuple[RunnerCredential, str]:
    """Give a runner token S3 credentials of its own; returns the record and the secret key,
    which is shown once and never stored. Issuing again rotates the key."""
    if token.revoked_at is not None:
        raise ValidationError(_("This token is revoked; create a new one first."),
                              code="token_revoked")
    agent = token.agent
    name = iam_user_name(token)
    policy = runner_policy(agent)
    iam = iam_client()
    try:
        try:
            iam.create_user(UserName=name)
        except ClientError as exc:
            if _error_code(exc) != "EntityAlreadyExists":
                raise
        for old in iam.list_access_keys(UserName=name).get("AccessKeyMetadata", []):
            iam.delete_access_key(UserName=name, AccessKeyId=old["AccessKeyId"])
        key = iam.create_access_key(UserName=name)["AccessKey"]
        iam.put_user_policy(UserName=name, PolicyName=POLICY_NAME,
                            PolicyDocument=json.dumps(policy))
    except (ClientError, BotoCoreError) as exc:
        raise _failed(exc) from exc
    with transaction.atomic():
        RunnerCredential.objects.filter(token=token, revoked_at__isnull=True).update(
            revoked_at=timezone.now())
        credential = RunnerCredential.objects.create(
            token=token, agent=agent, iam_user=name, access_key_id=key["AccessKeyId"],
            policy=policy, created_by=by)
        audit_record(actor=Actor.person(by), action="credentials.issue", project=agent.project,
                     obj=credential, details={"agent": agent.slug, "token": token.name,
                                              "access_key_id": key["AccessKeyId"],
                                              "iam_user": name})
    return credential, key["SecretAccessKey"]


def credentials_revoke(*, token: AgentToken, by) -> int:
    """Delete the token's IAM user with its keys and policy; how many live records it ended.
    Raises CredentialsUnavailable when the store did not answer (they stay live: retry)."""
    live = list(RunnerCredential.objects.filter(token=token, revoked_at__isnull=True))
    if not live:
        return 0
    iam = iam_client()
    name = iam_user_name(token)
    try:
        for step in (_delete_keys, _delete_policy, _delete_user):
            step(iam, name)
    except (ClientError, BotoCoreError) as exc:
        raise _failed(exc) from exc
    with transaction.atomic():
        now = timezone.now()
        for credential in live:
            credential.revoked_at = now
            credential.save(update_fields=["revoked_at"])
            audit_record(actor=Actor.person(by), action="credentials.revoke",
                         project=credential.agent.project, obj=credential,
                         details={"agent": credential.agent.slug,
                                  "access_key_id": credential.access_key_id})
    return len(live)


def credentials_refresh(*, agent: Agent, by) -> int:
    """Write the current runner policy to every live credential of the agent (after its hook
    policy changed); how many were updated."""
    live = list(RunnerCredential.objects.filter(agent=agent, revoked_at__isnull=True))
    if not live:
        return 0
    policy = runner_policy(agent)
    iam = iam_client()
    try:
        for credential in live:
            iam.put_user_policy(UserName=credential.iam_user, PolicyName=POLICY_NAME,
                                PolicyDocument=json.dumps(policy))
    except (ClientError, BotoCoreError) as exc:
        raise _failed(exc) from exc
    with transaction.atomic():
        RunnerCredential.objects.filter(pk__in=[c.pk for c in live]).update(policy=policy)
        audit_record(actor=Actor.person(by), action="credentials.policy", project=agent.project,
                     obj=agent, details={"credentials": [c.access_key_id for c in live]})
    return len(live)


def _delete_keys(iam, name: str) -> None:
    try:
        for key in iam.list_access_keys(UserName=name).get("AccessKeyMetadata", []):
            iam.delete_access_key(UserName=name, AccessKeyId=key["AccessKeyId"])
    except ClientError as exc:
        if not _gone(exc):
            raise


def _delete_policy(iam, name: str) -> None:
    try:
        iam.delete_user_policy(UserName=name, PolicyName=POLICY_NAME)
    except ClientError as exc:
        if not _gone(exc):
            raise


def _delete_user(iam, name: str) -> None:
    try:
        iam.delete_user(UserName=name)
    except ClientError as exc:
        if not _gone(exc):
            raise


# --- What a runner's credentials may do ------------------------------------------------------


def runner_policy(agent: Agent) -> dict:
    """What one agent's runner may do straight in the bucket: read its agent's files, the
    project's profiles, workspace and session scratch space; write the session scratch space
    and, where the agent's hook policy lets it replace a file without a person's approval,
    that file. Never the `_history/` snapshots, never another project's keys.

    Files the hook policy allows only appends to, or only with approval, stay read-only here:
    those changes go through the post hook, where the policy and the audit trail apply. IAM's
    `*` crosses folders, so `workspace/decisions/*.md` also admits deeper files (the console
    records whatever lands as an external revision either way)."""
    project = agent.project
    bucket, prefix = project.bucket_name, project.prefix
    readable = [layout.agent_prefix(prefix, agent.pk), layout.users_root(prefix),
                layout.workspace_prefix(prefix)]
    statements = [
        iam.list_statement(bucket, readable + [layout.sessions_root(prefix)]),
        {
            "Sid": "ReadOwnMemory",
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [iam.arn(bucket, p + "*") for p in readable],
        },
        {
            "Sid": "WriteSessionScratch",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject"],
            "Resource": iam.arn(bucket, f"{layout.sessions_root(prefix)}*"),
        },
    ]
    writable = direct_write_patterns(agent)
    if writable:
        statements.append({
            "Sid": "WriteWhatTheHookPolicyAllows",
            "Effect": "Allow",
            "Action": ["s3:PutObject"],
            "Resource": [iam.arn(bucket, pattern) for pattern in writable],
        })
    return {"Version": "2012-10-17", "Statement": statements}


def direct_write_allowed(target: str, rule: dict | None) -> bool:
    """Whether a runner may replace a file straight in S3 under a hook-policy rule: the rule
    allows replace, with no approval (runner_policy grants PutObject on exactly these).
    Never USER.md: a profile is the session's person's, which one set of credentials for the
    agent cannot express (it would reach every member's profile); it goes through the hook."""
    return (target != layout.USER_FILE and bool(rule) and "replace" in rule.get("modes", [])
            and not rule.get("approval"))


def direct_write_patterns(agent: Agent) -> list[str]:
    """Key patterns (IAM wildcards) of the files this agent may replace without approval.

    A glob is left out when a stricter rule governs some of its files (the most specific
    rule wins in the hooks, `hooks.policy_rule`): IAM cannot express "all but those" on
    every store (SeaweedFS refuses Deny), so those files go through the hook instead."""
    prefix = agent.project.prefix
    patterns = []
    rules = (agent.hook_policy or {}).get("post", {})
    stricter = [target for target, rule in rules.items()
                if target.startswith("workspace/") and not direct_write_allowed(target, rule)]
    for target, rule in sorted(rules.items()):
        if not direct_write_allowed(target, rule):
            continue
        if target.startswith("workspace/") and any(
                _overlaps(target, other) for other in stricter):
            continue
        if target in layout.AGENT_FILES:
            patterns.append(layout.agent_file_key(prefix, agent.pk, target))
        else:  # workspace/<glob>.md: ** and * both become IAM's *, [...] becomes ?
            glob = re.sub(r"\[[^\]]*\]", "?", target.removeprefix("workspace/"))
            patterns.append(layout.workspace_prefix(prefix) + re.sub(r"[*]+", "*", glob))
    return patterns


def _overlaps(glob: str, other: str) -> bool:
    """Whether `glob` selects a file `other` also selects (`other`'s wildcards read as a
    letter give one such file)."""
    sample = injection.glob_sample(other.removeprefix("workspace/"))
    return bool(injection.workspace_matches(glob, [sample]))
