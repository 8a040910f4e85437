"""The pre hook: catch up with the bucket, assemble the agent's prompt, keep the exact prompt
(`memory.receipts`) and record the session with its receipt. The API and the console call
`hook_pre`; the receipt says which revision of each file the session was shown."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

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
    from its receipt and kept prompt."""
    if request_key:
        earlier = _session_of(agent, request_key)
        if earlier is not None:
            return earlier, None
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
    # The exact bytes returned, kept once per distinct prompt (no request when already kept).
    stored = receipts.prompt_keep(
        project=agent.project, prompt=assembly.prompt, sha256=assembly.sha256, user=user
    )
    profiles = [
        f.file_id
        for section in assembly.sections
        for f in section.files
        if f.path == layout.USER_FILE and f.file_id
    ]
    with transaction.atomic():  # one commit for the receipt and its event
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
                    session = _pre_records(agent, user, external_ref, assembly, stored, request_key, via)
            except IntegrityError:
                return _session_of(agent, request_key), None
    if erased:
        _forget_prompt(agent.project, assembly.sha256)
        raise HookError(
            "profile_erased",
            "The person's profile was erased while this prompt was assembled; call the pre hook again.",
        )
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
    assembly: injection.Assembly,
    stored: bool,
    request_key: str = "",
    via: str = "",
) -> AgentSession:
    # One row is the receipt and the pre hook's event (the session page shows it as the first
    # event): one INSERT on the hook's path, not two.
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
        truncated=any(s.truncated for s in assembly.sections),
        bucket_checked=bool(assembly.bucket_checked),
        request_key=request_key,
        via=via,
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
