"""What the runner's hooks do after the prompt: post (write back per the agent's hook
policy: directly, or as a proposal a person decides in `runners.proposals`), tool and error
(record, and log per policy). The pre hook is `runners.prehook`; the API and the console call
these functions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from projects import metrics, outbox
from projects.audit import VIA_MCP, Actor
from projects.errors import Refusal
from projects.memory import carried, consent, errors, layout, poisoning, quarantine, removal, store
from projects.memory.content import encode
from projects.models import AgentSession, IdempotencyRecord, MemoryFile, SessionEvent
from projects.runners import idempotency, injection, policy, schemas, targets
from projects.runners.policy import HookError
from projects.runners.prehook import receipt_revisions
from projects.system_text import message as system_message

# --- Post ------------------------------------------------------------------------------------------


@dataclass
class WriteRequest:
    path: str
    mode: str
    content: str = ""
    base_revision: int | None = None
    new_path: str | None = None  # a rename's target


def session_actor(session: AgentSession) -> Actor:
    """Who a session's writes are by: its agent; for a session of the console's MCP endpoint
    opened by a person who signed in, the agent on behalf of that person, via MCP."""
    if session.via == VIA_MCP:
        person = session.user if session.user_id else None
        return Actor.for_agent(session.agent, str(session.pk), on_behalf_of=person, via=VIA_MCP)
    return Actor.for_agent(session.agent, str(session.pk))


def apply_write(
    file: MemoryFile,
    mode: str,
    content: str,
    base: int | None,
    actor: Actor,
    message,
    request: str = "",
    released: dict | None = None,
):
    """An append or a replace, as the post hook and an approved proposal make them. `request`
    names the runner request's write, so a retry finds it done (store.file_save); `released`,
    who released a quarantined write (memory/quarantine.py)."""
    if mode == "append":  # commutes with any other write: on top of whatever the head is
        return store.file_append(
            file=file, addition=content, actor=actor, message=message, request=request, released=released
        )
    return store.file_save(
        file=file,
        content=content,
        actor=actor,
        message=message,
        base_revision=base,
        request=request,
        released=released,
    )


def hook_post(
    *,
    session: AgentSession,
    writes: list[WriteRequest],
    summary: str = "",
    record: IdempotencyRecord | None = None,
    end: bool = True,
) -> list[dict]:
    """Apply each write per policy; one result per write, in order. Never raises for a single
    write's refusal: the runner learns what happened to each.

    Each write commits on its own together with its result in `record` (the request's
    idempotency record), so a retry after a crash or a 503 goes on from the first write that
    did not commit and never applies one twice; the answer is stored with the session's event
    in the last transaction. `end`: the post ends the session (runtimes that write as they go,
    such as the MCP server, send end=false until their client leaves)."""
    agent = session.agent
    actor = session_actor(session)
    seen = receipt_revisions(session)
    results = []
    message = summary[:500] if summary else system_message("post_hook", session=str(session.id)[:8])
    for index, write in enumerate(writes):
        done = idempotency.noted(record, index)
        if done is None:
            with transaction.atomic():
                request = f"{record.pk}:{index}" if record is not None else ""
                done = _post_one(session, write, actor, seen, message, request)
                idempotency.note(record, index, done)
            metrics.write_counted("quarantined" if done.get("code") == "quarantined" else done["status"])
        results.append(done)
    with transaction.atomic():
        if end and not writes and _ended_already(session):
            # Ending an ended session does nothing (Claude Code's SessionEnd after its Stop,
            # another adapter's finally path): no second post event, no second
            # session.ended. The session ends once, whichever hook ends it.
            idempotency.finish(record, 200, {"session": str(session.id), "results": results})
            return results
        SessionEvent.objects.create(
            session=session,
            kind=SessionEvent.Kind.POST,
            payload={"summary": summary[:2000], "results": results, "end": end},
        )
        if not session.carried_indexed:  # the files its prompt carried: off the pre hook's path
            carried.index_sessions([session])
            session.carried_indexed = True
        idempotency.finish(record, 200, {"session": str(session.id), "results": results})
        if end:
            ended = timezone.now()
            AgentSession.objects.filter(pk=session.pk).update(ended_at=ended)
            outbox.emit(
                outbox.SESSION_ENDED,
                project=agent.project,
                at=ended,
                data=lambda: {
                    "project": agent.project.slug,
                    "session": str(session.id),
                    "agent": agent.slug,
                    "user": session.user.get_username() if session.user_id else None,
                    "summary": summary[:2000],
                    "writes": [
                        {
                            key: result.get(key)
                            for key in ("path", "mode", "status", "revision", "proposal", "code")
                            if key in result
                        }
                        for result in results
                    ],
                },
            )
    return results


def _ended_already(session: AgentSession) -> bool:
    """Under the session's row lock, so two ends sent at once record one."""
    ended = AgentSession.objects.select_for_update().filter(pk=session.pk).values_list("ended_at", flat=True)
    return next(iter(ended), None) is not None


def _post_one(
    session: AgentSession, write: WriteRequest, actor: Actor, seen: dict, message, request: str = ""
) -> dict:
    agent = session.agent
    result = {"path": write.path, "mode": write.mode}
    if write.new_path is not None:
        result["new_path"] = write.new_path
    # One spelling for the policy, the receipt and the store (which keeps paths as NFC).
    write = WriteRequest(
        layout.nfc(write.path),
        write.mode,
        write.content,
        write.base_revision,
        layout.nfc(write.new_path) if write.new_path is not None else None,
    )
    try:
        if write.mode not in schemas.MODES:
            raise HookError("bad_mode", "mode is append, replace, delete or rename.")
        rule = policy.policy_rule(agent, write.path)
        if write.mode in schemas.MOVE_MODES:
            _post_move(session, write, rule, actor, seen, message, result)
            return result
        if rule is None:
            raise HookError("policy_denied", f"The hook policy does not let this agent write {write.path}.")
        if policy.rule_how(rule, write.mode) is None:
            modes = [m for m in schemas.MODES if policy.rule_how(rule, m)]
            raise HookError(
                "policy_denied",
                f"The hook policy allows only {', '.join(modes) or 'no'} writes to {write.path}.",
            )
        file = targets.file_to_write(session, write.path)
        base = write.base_revision
        if write.mode == "replace" and base is None:
            base = _default_base(file, write.path, seen)
        if rule.get("approval"):
            encode(write.content)  # refuse bad content now, not at approval
            consent.refuse_agent_write(file, actor)  # nor proposed, once consent is withdrawn
            _propose(session, file, actor, write, base, result)
        else:
            before = file.head.number if file.head is not None else None
            revision = apply_write(file, write.mode, write.content, base, actor, message, request)
            result.update(status="written", revision=revision.number)
            if revision.number == (base if write.mode == "replace" else None if write.content else before):
                result["unchanged"] = True  # the head's own text, or nothing added: no revision
    except HookError as exc:
        result.update(status="rejected", code=exc.code, message=exc.message)
    except quarantine.Quarantined as exc:  # held for a person: the families, never the text
        result.update(status="proposed", code="quarantined", proposal=exc.proposal.pk, findings=exc.families)
    except errors.SaveConflict as exc:
        # The current text and revision come along, so the runner can merge and send a
        # replace on top of them at once.
        result.update(
            status="conflict",
            code="conflict",
            message=exc.summary,
            head_revision=exc.head.number if exc.head else None,
            head_text=exc.head_text,
        )
    except (errors.ContentRejected, errors.FileDeleted, errors.TargetExists, errors.ConsentWithdrawn) as exc:
        result.update(status="rejected", code=exc.code, message=exc.message)
    return result


def _default_base(file: MemoryFile, path: str, seen: dict) -> int | None:
    """The base of a replace, delete or rename sent without one: the revision the session
    was shown. A file the session was not shown needs the caller's base (it would otherwise
    overwrite or remove what it never read)."""
    base = seen.get(path)
    if base is None and file.head is not None and not file.is_deleted:
        raise HookError(
            "base_required",
            "This file existed before the session saw it: send "
            "base_revision with a replace, delete or rename.",
        )
    if base is None and file.head is not None:
        base = file.head.number
    return base


def _propose(
    session: AgentSession | None,
    file: MemoryFile,
    actor: Actor,
    write: WriteRequest,
    base: int | None,
    result: dict,
    *,
    consolidation: str = "",
    found: dict | None = None,
) -> None:
    """Every proposal is made here: a session's (the post hook's) and consolidation's
    (runners.consolidation: no session, `consolidation` its job, `found` what it found), so
    what holds for a proposal (screening, quarantine) holds for both."""
    proposal = quarantine.proposal_create(
        file=file,
        actor=actor,
        mode=write.mode,
        content=write.content,
        base_revision=base,
        new_path=write.new_path or "",
        consolidation=consolidation,
        found=found,
    )
    result.update(status="proposed", proposal=proposal.pk)
    if proposal.quarantined:
        result.update(code="quarantined", findings=poisoning.families(proposal.poisoning["findings"]))


def _post_move(
    session: AgentSession,
    write: WriteRequest,
    rule: dict | None,
    actor: Actor,
    seen: dict,
    message: str,
    result: dict,
) -> None:
    """A delete or a rename, per the rule of the file's path (and, for a rename, the rule of
    the new path, which must let the agent write there: a rename is a write at the new path)."""
    how = policy.rule_how(rule, write.mode)
    verb = "delete" if write.mode == "delete" else "rename"
    if how is None:
        raise HookError("policy_denied", f"The hook policy does not let this agent {verb} {write.path}.")
    target = None
    if write.mode == "rename":
        if not write.new_path:
            raise HookError("new_path_required", "A rename needs new_path.")
        if not (
            write.path.startswith(injection.WORKSPACE_PREFIX)
            and write.new_path.startswith(injection.WORKSPACE_PREFIX)
        ):
            raise HookError("bad_path", "Only workspace files are renamed, within the workspace.")
        target_rule = policy.policy_rule(session.agent, write.new_path)
        if not any(policy.rule_how(target_rule, m) for m in schemas.CONTENT_MODES):
            raise HookError(
                "policy_denied", f"The hook policy does not let this agent write {write.new_path}."
            )
        if target_rule.get("approval"):
            how = "proposal"
    file = targets.file_named(session, write.path)
    if file is None or file.head is None or file.is_deleted:
        raise HookError("not_found", f"{write.path} does not exist (or is deleted already).")
    base = write.base_revision if write.base_revision is not None else _default_base(file, write.path, seen)
    if write.mode == "rename":
        target = targets.file_to_write(session, write.new_path)
        if target.head is not None and not target.is_deleted:
            raise errors.TargetExists(f"{write.new_path} exists already; nothing was renamed.")
    if how == "proposal":
        consent.refuse_agent_write(file, actor)
        _propose(session, file, actor, write, base, result)
    elif write.mode == "delete":
        revision = removal.file_delete(file=file, actor=actor, message=message, base_revision=base)
        result.update(status="written", revision=revision.number)
    else:
        tombstone, moved = removal.file_rename(
            file=file, target=target, actor=actor, message=message, base_revision=base
        )
        result.update(status="written", revision=tombstone.number, new_revision=moved.number)


# --- Tool and error --------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return next((line for line in (text or "").splitlines() if line.strip()), "")


def _one_line(text: str, limit: int = 300) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hook_event(
    *, session: AgentSession, kind: str, payload: dict, record: IdempotencyRecord | None = None
) -> dict:
    """Record a tool call or an error; append a line to the policy's workspace log if any.
    The event, the log line and the stored answer commit together."""
    with transaction.atomic():
        event = SessionEvent.objects.create(session=session, kind=kind, payload=payload)
        outcome = {"session": str(session.id), "recorded": True, "event": event.pk}
        log_path = ((session.agent.hook_policy or {}).get(kind) or {}).get("log")
        if log_path:
            # A line says what happened and where to look, never what a file holds: a tool's
            # summary (its input and output: paths, file contents) stays in the session's
            # event, and an error is its first line, cut short.
            when = timezone.now().strftime("%Y-%m-%d %H:%M:%SZ")
            what = (
                f"tool `{_one_line(payload.get('name', ''), 80)}`"
                if kind == "tool"
                else f"error: {_one_line(_first_line(payload.get('message', '')), 160)}"
            )
            line = f"- {when} session {str(session.id)[:8]} {what}\n"
            try:
                file = targets.file_to_write(session, log_path)
                revision = store.file_append(
                    file=file,
                    addition=line,
                    actor=session_actor(session),
                    message=system_message(f"{kind}_hook"),
                    request=f"{record.pk}:log" if record is not None else "",
                )
                outcome.update(logged_to=log_path, revision=revision.number)
            except Refusal as exc:
                outcome.update(log_error=exc.message)
        idempotency.finish(record, 200, outcome)
    return outcome
