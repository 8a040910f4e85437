"""The pre hook: catch up with the bucket, assemble the agent's prompt, keep the exact prompt
(`memory.receipts`) and record the session with its receipt. The API and the console call
`hook_pre`; the receipt says which revision of each file the session was shown."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from projects import outbox
from projects.memory import catchup, errors, layout, objects, receipts
from projects.models import Agent, AgentSession, MemoryFile
from projects.runners import context as prompt_context
from projects.runners import injection
from projects.runners.policy import HookError


def hook_pre(
    *, agent: Agent, user, external_ref: str = "", request_key: str = "", via: str = ""
) -> tuple[AgentSession, injection.Assembly | None]:
    """Catch up with the bucket (direct writes become revisions), assemble, record a receipt.

    If S3 cannot be listed the prompt is assembled from what the console recorded, and the
    receipt and answer say the bucket was not checked (`bucket_checked: false`).

    `via`: "mcp" for the console's own MCP endpoint (AgentSession.via: the agent then acts on
    behalf of the signed-in user).

    With a `request_key` (the runner's Idempotency-Key) a retry whose first answer was lost
    opens no second session: it gets (the recorded session, None), and the caller answers
    from its receipt and kept prompt. The retry is found by the session's unique key when
    its INSERT fails, so a first attempt reads nothing for it."""
    try:
        return _hook_pre(agent, user, external_ref, request_key, via)
    except HookError:
        earlier = _session_of(agent, request_key) if request_key else None
        if earlier is None:
            raise
        return earlier, None  # answered before: the same session, whatever changed since


def _hook_pre(agent: Agent, user, external_ref: str, request_key: str, via: str):
    if agent.project.archived_at is not None:
        raise HookError(
            "project_archived",
            "This agent's project is archived: its agents get no prompt until an admin brings it back.",
        )
    if agent.archived_at is not None:
        raise HookError(
            "agent_archived",
            "This agent is archived: it gets no prompt until an admin brings it back (agent settings).",
        )
    try:
        manifest = injection.parse_manifest(agent.manifest)
    except ValidationError as exc:  # edited in the database, or by an older console
        raise HookError(
            "manifest_invalid",
            "This agent's injection manifest is not valid: "
            + " ".join(exc.messages)
            + " An admin fixes it in the agent's "
            "settings.",
        ) from None
    # The LISTs run while the prompt is assembled from the records the catch-up read as it
    # started; only when the LISTs show a difference from those is it assembled again, after
    # adopting it. A warm hook costs the longer of the two, not their sum.
    catch_up = catchup.bucket_catch_up_start(
        project=agent.project,
        agent=agent,
        user=user,
        workspace=any(s.source.startswith(injection.WORKSPACE_PREFIX) for s in manifest.sections),
    )
    answer = None
    base = prompt_context.answer_base(agent=agent, user=user, manifest=manifest)
    # With nothing to compare with the bucket, the heads say it all.
    if not catch_up.listed_prefixes and prompt_context.any_remembered(base):
        answer = prompt_context.remembered(prompt_context.answer_key(base, catch_up.heads()))
    if answer is None:
        answer = _assemble(base, manifest, catch_up)
    assembly = answer.assembly
    if connection.in_atomic_block:  # inside the caller's transaction: nothing is durable yet
        return _pre_within(agent, user, external_ref, answer, request_key, via)
    # The prompt is kept with the session: in S3 already, or in a row of the same transaction
    # that this process PUTs after the answer (memory.receipts). The database checks the
    # session's reference to the profile it injected when it commits: an erasure that removed
    # the profile meanwhile makes the commit fail (the hook takes nothing back: nothing was
    # stored), and one that comes after sees the session (docs/ARCHITECTURE.md, "The erasure's guard").
    known = receipts.prompt_known(agent.project, assembly.sha256)
    try:
        with transaction.atomic():
            session = _pre_records(
                agent, user, external_ref, answer, True, request_key, via, profile=_profile(answer)
            )
            if not known:
                receipts.prompt_pending(
                    project=agent.project, sha256=assembly.sha256, prompt=assembly.prompt, user=user
                )
    except IntegrityError:
        earlier = _session_of(agent, request_key) if request_key else None
        if earlier is not None:  # a concurrent retry with the same key won it
            return earlier, None
        if _profile(answer) is not None and not MemoryFile.objects.filter(pk=_profile(answer)).exists():
            raise _erased() from None
        raise
    if not known:
        receipts.prompt_store_later(project=agent.project, sha256=assembly.sha256)
    return session, assembly


def _assemble(base: tuple, manifest, catch_up) -> prompt_context.Remembered:
    """A prompt not remembered: assembled from the records (read now), then checked against
    the bucket's listings where there are any, and remembered under its heads."""
    agent, user = catch_up.agent, catch_up.user
    assembly = prompt_context.build_context(
        agent=agent, user=user, manifest=manifest, records=catch_up.records
    )
    try:
        catch_up.finish()
        checked = True
    except errors.StorageUnavailable:
        checked = False
    if catch_up.changed:
        assembly = prompt_context.build_context(agent=agent, user=user, manifest=manifest)
    assembly.bucket_checked = checked
    if catch_up.listed_prefixes:  # not remembered: the bucket is listed each time
        return prompt_context.answer_of(assembly)
    return prompt_context.remember(prompt_context.answer_key(base, catch_up.heads()), assembly)


def _profile(answer: prompt_context.Remembered) -> str | None:
    return answer.profiles[0] if answer.profiles else None


def _erased() -> HookError:
    return HookError(
        "profile_erased",
        "The person's profile was erased while this prompt was assembled; call the pre hook again.",
    )


def _pre_within(agent, user, external_ref, answer, request_key, via):
    """The pre hook inside a caller's transaction (a test's, a command's): the prompt goes to
    S3 first, and the profile's row is locked, as the commit's check cannot be waited for."""
    assembly = answer.assembly
    if request_key:
        earlier = _session_of(agent, request_key)
        if earlier is not None:
            return earlier, None
    stored = receipts.prompt_keep(
        project=agent.project, prompt=assembly.prompt, sha256=assembly.sha256, user=user
    )
    profiles = list(answer.profiles)
    with transaction.atomic():
        # An erasure of the profile injected here locks its row while it purges the person's
        # kept prompts: wait for it (or hold it off) so that either it sees this session, or
        # this hook sees the profile gone and takes its prompt back.
        if profiles and len(
            list(
                MemoryFile.objects.select_for_update()
                .filter(pk__in=profiles)
                .order_by()
                .values_list("pk", flat=True)
            )
        ) < len(profiles):
            erased = True
        else:
            erased = False
            try:
                with transaction.atomic():  # a savepoint: a concurrent retry may win the key
                    session = _pre_records(
                        agent, user, external_ref, answer, stored, request_key, via, profile=_profile(answer)
                    )
            except IntegrityError:
                return _session_of(agent, request_key), None
    if erased:
        _forget_prompt(agent.project, assembly.sha256)
        raise _erased()
    return session, assembly


def _forget_prompt(project, sha256: str) -> None:
    """Take back a prompt kept for a session that was not recorded, unless a recorded session
    returned the same bytes."""
    if not AgentSession.objects.filter(agent__project=project, prompt_sha256=sha256).exists():
        try:
            objects.purge(project, [layout.prompt_key(project.prefix, sha256)])
        except errors.Held:  # a legal hold placed meanwhile keeps it (the storage refused)
            return
        receipts.prompt_forget(project=project, sha256s=[sha256])


def _session_of(agent: Agent, request_key: str) -> AgentSession | None:
    return (
        AgentSession.objects.select_related("agent", "agent__project", "user")
        .filter(agent=agent, request_key=request_key)
        .first()
    )


def _pre_records(
    agent: Agent,
    user,
    external_ref: str,
    answer: prompt_context.Remembered,
    stored: bool,
    request_key: str = "",
    via: str = "",
    profile: str | None = None,
) -> AgentSession:
    # One row is the receipt and the pre hook's event (the session page shows it as the first
    # event): one INSERT on the hook's path, not two.
    assembly = answer.assembly
    session = AgentSession.objects.create(
        agent=agent,
        user=user,
        external_ref=external_ref[:200],
        prompt_sha256=assembly.sha256,
        total_tokens=assembly.total_tokens,
        tokenizer=assembly.tokenizer,
        receipt=assembly.receipt,
        prompt_stored=stored,
        budget=assembly.budget,
        over_budget=assembly.over_budget,
        truncated=answer.truncated,
        bucket_checked=bool(assembly.bucket_checked),
        request_key=request_key,
        via=via,
        profile_id=profile,
    )
    # Not an audited change, so its event is emitted here (no subscription: no query at all).
    outbox.emit(
        outbox.SESSION_STARTED,
        project=agent.project,
        at=session.created_at,
        data=lambda: {
            "project": agent.project.slug,
            "session": str(session.id),
            "agent": agent.slug,
            "user": user.get_username() if user is not None else None,
            "external_ref": session.external_ref or None,
            "total_tokens": assembly.total_tokens,
            "truncated": session.truncated,
            "prompt_sha256": assembly.sha256,
        },
    )
    return session


def receipt_revisions(session: AgentSession) -> dict[str, int]:
    """path -> revision injected in this session (from the receipt)."""
    return {
        f["path"]: f["revision"]
        for section in session.receipt
        for f in section["files"]
        if f.get("revision") is not None
    }
