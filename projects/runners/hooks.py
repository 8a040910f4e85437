"""What the runner's hooks mean: pre (assemble and record a receipt), post (write back per
the agent's hook policy), tool and error (record, and log per policy). Proposals that need a
person's approval are decided here too. The API and the console call these functions."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from projects import outbox
from projects.audit import Actor, audit_record
from projects.errors import Refusal
from projects.memory import errors, layout, receipts, store
from projects.memory.content import encode
from projects.models import (
    Agent,
    AgentSession,
    IdempotencyRecord,
    Membership,
    MemoryFile,
    Proposal,
    Revision,
    SessionEvent,
)
from projects.runners import context as prompt_context
from projects.runners import credentials, idempotency, injection, schemas
from projects.runners.schemas import CONTENT_MODES, MODES, MOVE_MODES
from projects.system_text import message as system_message


class HookError(Refusal):
    """A caller's mistake or a refusal by the hook policy (runners.api maps codes to HTTP)."""

    def __init__(self, code: str, message: str):
        super().__init__(message, code)


# --- Pre -------------------------------------------------------------------------------------------


def hook_pre(*, agent: Agent, user, external_ref: str = "") -> tuple[AgentSession, injection.Assembly]:
    """Catch up with the bucket (direct writes become revisions), assemble, record a receipt.

    If S3 cannot be listed the prompt is assembled from what the console recorded, and the
    receipt and answer say the bucket was not checked (`bucket_checked: false`)."""
    if agent.project.archived_at is not None:
        raise HookError("project_archived", "This agent's project is archived: its agents get "
                                            "no prompt until an admin brings it back.")
    if agent.archived_at is not None:
        raise HookError("agent_archived", "This agent is archived: it gets no prompt until an "
                                          "admin brings it back (agent settings).")
    try:
        manifest = injection.parse_manifest(agent.manifest)
    except ValidationError as exc:  # edited in the database, or by an older console
        raise HookError("manifest_invalid", "This agent's injection manifest is not valid: "
                        + " ".join(exc.messages) + " An admin fixes it in the agent's "
                        "settings.") from None
    # The LISTs run while the prompt is assembled from the records the catch-up read as it
    # started; only when the LISTs show a difference from those is it assembled again, after
    # adopting it. A warm hook costs the longer of the two, not their sum.
    catch_up = store.bucket_catch_up_start(
        project=agent.project, agent=agent, user=user,
        workspace=any(s.source.startswith(injection.WORKSPACE_PREFIX) for s in manifest.sections))
    assembly = prompt_context.build_context(agent=agent, user=user, manifest=manifest,
                                            records=catch_up.records)
    try:
        catch_up.finish()
        checked = True
    except errors.StorageUnavailable:
        checked = False
    if catch_up.changed:
        assembly = prompt_context.build_context(agent=agent, user=user, manifest=manifest)
    assembly.bucket_checked = checked
    # The exact bytes returned, kept once per distinct prompt (no request when already kept).
    stored = receipts.prompt_keep(project=agent.project, prompt=assembly.prompt,
                                  sha256=assembly.sha256, user=user)
    profiles = [f.file_id for section in assembly.sections for f in section.files
                if f.path == layout.USER_FILE and f.file_id]
    with transaction.atomic():  # one commit for the receipt and its event
        # An erasure of the profile injected here locks its row while it purges the person's
        # kept prompts: wait for it (or hold it off) so that either it sees this session, or
        # this hook sees the profile gone and takes its prompt back.
        if profiles and len(list(MemoryFile.objects.select_for_update()
                                 .filter(pk__in=profiles).order_by().values_list("pk", flat=True))) \
                < len(profiles):
            erased = True
        else:
            erased = False
            session = _pre_records(agent, user, external_ref, assembly, stored)
    if erased:
        _forget_prompt(agent.project, assembly.sha256)
        raise HookError("profile_erased", "The person's profile was erased while this prompt "
                                          "was assembled; call the pre hook again.")
    return session, assembly


def _forget_prompt(project, sha256: str) -> None:
    """Take back a prompt kept for a session that was not recorded, unless a recorded session
    returned the same bytes."""
    if not AgentSession.objects.filter(agent__project=project, prompt_sha256=sha256).exists():
        store.purge(project, [layout.prompt_key(project.prefix, sha256)])
        receipts.prompt_forget(project=project, sha256s=[sha256])


def _pre_records(agent: Agent, user, external_ref: str, assembly: injection.Assembly,
                 stored: bool) -> AgentSession:
    # One row is the receipt and the pre hook's event (the session page shows it as the first
    # event): one INSERT on the hook's path, not two.
    session = AgentSession.objects.create(
        agent=agent, user=user, external_ref=external_ref[:200], prompt_sha256=assembly.sha256,
        total_tokens=assembly.total_tokens, tokenizer=assembly.tokenizer, receipt=assembly.receipt,
        prompt_stored=stored, budget=assembly.budget, over_budget=assembly.over_budget,
        truncated=any(s.truncated for s in assembly.sections),
        bucket_checked=bool(assembly.bucket_checked))
    # Not an audited change, so its event is emitted here (no subscription: no query at all).
    outbox.emit(outbox.SESSION_STARTED, project=agent.project, at=session.created_at, data=lambda: {
        "project": agent.project.slug, "session": str(session.id), "agent": agent.slug,
        "user": user.get_username() if user is not None else None,
        "external_ref": session.external_ref or None, "total_tokens": assembly.total_tokens,
        "truncated": session.truncated, "prompt_sha256": assembly.sha256})
    return session


def receipt_revisions(session: AgentSession) -> dict[str, int]:
    """path -> revision injected in this session (from the receipt)."""
    return {f["path"]: f["revision"] for section in session.receipt for f in section["files"]
            if f.get("revision") is not None}


# --- Policy ----------------------------------------------------------------------------------------


def policy_rule(agent: Agent, path: str) -> dict | None:
    """The post-hook rule for a path ('AGENTS.md', 'USER.md', 'workspace/x.md'), or None.

    The path is read as the store will store it (NFC), so another spelling of the same name
    cannot pass a rule meant for it. Of the globs that match, the most specific wins (the
    most characters that are not wildcards), whatever order the rules were saved in: a rule
    for `workspace/secret/*.md` is not undone by a `workspace/**.md` saved before it."""
    path = layout.nfc(path)
    rules = {layout.nfc(key): rule  # keys saved before they were NFC
             for key, rule in ((agent.hook_policy or {}).get("post", {})).items()}
    if path in rules:
        return rules[path]
    if path.startswith(injection.WORKSPACE_PREFIX):
        relative = path[len(injection.WORKSPACE_PREFIX):]
        matching = [pattern for pattern in rules
                    if pattern.startswith(injection.WORKSPACE_PREFIX)
                    and injection.workspace_matches(pattern, [relative])]
        if matching:
            return rules[max(matching, key=_strictness(rules))]
    return None


def _strictness(rules: dict):
    """The key ranking matching globs: the most characters that are not wildcards, then the
    fewest `**`, then the one asking approval (the name breaks what ties remain)."""
    return lambda pattern: (len(injection.glob_sample(pattern, "")), -pattern.count("**"),
                            bool(rules[pattern].get("approval")), pattern)


def _target(session: AgentSession, path: str) -> MemoryFile:
    agent = session.agent
    if path in layout.AGENT_FILES:
        return store.file_ensure(project=agent.project, scope=MemoryFile.Scope.AGENT, agent=agent, path=path)
    if path == layout.USER_FILE:
        if session.user is None:
            raise HookError("no_user", "This session has no user, so USER.md has no owner.")
        if not Membership.objects.filter(project=agent.project, user=session.user).exists():
            # Left the project since the pre hook: no profile is written for them (the pre
            # hook would not serve them now either).
            raise HookError("not_a_member", "The session's user is no longer a member of this "
                                            "project, so their USER.md is not written.")
        return store.file_ensure(project=agent.project, scope=MemoryFile.Scope.USER, user=session.user,
                                 path=path)
    if path.startswith(injection.WORKSPACE_PREFIX):
        try:
            return store.workspace_file_new(project=agent.project,
                                            path=path[len(injection.WORKSPACE_PREFIX):])
        except ValidationError as exc:
            raise HookError("bad_path", " ".join(exc.messages)) from None
    raise HookError("bad_path", "Paths are SOUL.md, AGENTS.md, TOOLS.md, USER.md or "
                                "workspace/<relative path>.md.")


# --- Post ------------------------------------------------------------------------------------------


@dataclass
class WriteRequest:
    path: str
    mode: str
    content: str = ""
    base_revision: int | None = None
    new_path: str | None = None  # a rename's target


def rule_how(rule: dict | None, mode: str) -> str | None:
    """How a rule lets `mode` happen: "direct", "proposal", or None (never). Rules saved
    before delete and rename existed have no key for them: never."""
    if rule is None:
        return None
    if mode in CONTENT_MODES:
        if mode not in rule.get("modes", []):
            return None
        return "proposal" if rule.get("approval") else "direct"
    how = rule.get(mode, "never")
    return how if how in ("direct", "proposal") else None


def _apply(file: MemoryFile, mode: str, content: str, base: int | None, actor: Actor,
           message):
    if mode == "append":  # commutes with any other write: on top of whatever the head is
        return store.file_append(file=file, addition=content, actor=actor, message=message)
    return store.file_save(file=file, content=content, actor=actor, message=message,
                           base_revision=base)


def hook_post(*, session: AgentSession, writes: list[WriteRequest], summary: str = "",
              record: IdempotencyRecord | None = None, end: bool = True) -> list[dict]:
    """Apply each write per policy; one result per write, in order. Never raises for a single
    write's refusal: the runner learns what happened to each.

    Each write commits on its own together with its result in `record` (the request's
    idempotency record), so a retry after a crash or a 503 goes on from the first write that
    did not commit and never applies one twice; the answer is stored with the session's event
    in the last transaction. `end`: the post ends the session (runtimes that write as they go,
    such as the MCP server, send end=false until their client leaves)."""
    agent = session.agent
    actor = Actor.for_agent(agent, str(session.id))
    seen = receipt_revisions(session)
    results = []
    message = summary[:500] if summary else system_message("post_hook",
                                                            session=str(session.id)[:8])
    for index, write in enumerate(writes):
        done = idempotency.noted(record, index)
        if done is None:
            with transaction.atomic():
                done = _post_one(session, write, actor, seen, message)
                idempotency.note(record, index, done)
        results.append(done)
    with transaction.atomic():
        SessionEvent.objects.create(session=session, kind=SessionEvent.Kind.POST,
                                    payload={"summary": summary[:2000], "results": results,
                                             "end": end})
        idempotency.finish(record, 200, {"session": str(session.id), "results": results})
        if end:
            ended = timezone.now()
            AgentSession.objects.filter(pk=session.pk).update(ended_at=ended)
            outbox.emit(outbox.SESSION_ENDED, project=agent.project, at=ended, data=lambda: {
                "project": agent.project.slug, "session": str(session.id), "agent": agent.slug,
                "user": session.user.get_username() if session.user_id else None,
                "summary": summary[:2000],
                "writes": [{key: result.get(key) for key in ("path", "mode", "status",
                                                             "revision", "proposal", "code")
                            if key in result} for result in results]})
    return results


def _post_one(session: AgentSession, write: WriteRequest, actor: Actor, seen: dict,
              message) -> dict:
    agent = session.agent
    result = {"path": write.path, "mode": write.mode}
    if write.new_path is not None:
        result["new_path"] = write.new_path
    # One spelling for the policy, the receipt and the store (which keeps paths as NFC).
    write = WriteRequest(layout.nfc(write.path), write.mode, write.content, write.base_revision,
                         layout.nfc(write.new_path) if write.new_path is not None else None)
    try:
        if write.mode not in MODES:
            raise HookError("bad_mode", "mode is append, replace, delete or rename.")
        rule = policy_rule(agent, write.path)
        if write.mode in MOVE_MODES:
            _post_move(session, write, rule, actor, seen, message, result)
            return result
        if rule is None:
            raise HookError("policy_denied", f"The hook policy does not let this agent write "
                                             f"{write.path}.")
        if rule_how(rule, write.mode) is None:
            modes = [m for m in MODES if rule_how(rule, m)]
            raise HookError("policy_denied", f"The hook policy allows only "
                                             f"{', '.join(modes) or 'no'} "
                                             f"writes to {write.path}.")
        file = _target(session, write.path)
        base = write.base_revision
        if write.mode == "replace" and base is None:
            base = _default_base(file, write.path, seen)
        if rule.get("approval"):
            encode(write.content)  # refuse bad content now, not at approval
            _propose(session, file, actor, write, base, result)
        else:
            before = file.head.number if file.head is not None else None
            revision = _apply(file, write.mode, write.content, base, actor, message)
            result.update(status="written", revision=revision.number)
            if revision.number in (base, before):
                result["unchanged"] = True  # the head's own text, or nothing added: no revision
    except HookError as exc:
        result.update(status="rejected", code=exc.code, message=exc.message)
    except errors.SaveConflict as exc:
        # The current text and revision come along, so the runner can merge and send a
        # replace on top of them at once.
        result.update(status="conflict", code="conflict", message=exc.summary,
                      head_revision=exc.head.number if exc.head else None,
                      head_text=exc.head_text)
    except (errors.ContentRejected, errors.FileDeleted, errors.TargetExists) as exc:
        result.update(status="rejected", code=exc.code, message=exc.message)
    return result


def _default_base(file: MemoryFile, path: str, seen: dict) -> int | None:
    """The base of a replace, delete or rename sent without one: the revision the session
    was shown. A file the session was not shown needs the caller's base (it would otherwise
    overwrite or remove what it never read)."""
    base = seen.get(path)
    if base is None and file.head is not None and not file.is_deleted:
        raise HookError("base_required", "This file existed before the session saw it: send "
                                         "base_revision with a replace, delete or rename.")
    if base is None and file.head is not None:
        base = file.head.number
    return base


def _propose(session: AgentSession, file: MemoryFile, actor: Actor, write: WriteRequest,
             base: int | None, result: dict) -> None:
    agent = session.agent
    proposal = Proposal.objects.create(
        project=agent.project, file=file, agent=agent, session=session, mode=write.mode,
        content=write.content, base_revision=base, new_path=write.new_path or "")
    details = {"path": write.path, "mode": write.mode}
    if write.new_path:
        details["new_path"] = write.new_path
    audit_record(actor=actor, action="proposal.create", project=agent.project, obj=proposal,
                 details=details)
    result.update(status="proposed", proposal=proposal.pk)


def _post_move(session: AgentSession, write: WriteRequest, rule: dict | None, actor: Actor,
               seen: dict, message: str, result: dict) -> None:
    """A delete or a rename, per the rule of the file's path (and, for a rename, the rule of
    the new path, which must let the agent write there: a rename is a write at the new path)."""
    how = rule_how(rule, write.mode)
    verb = "delete" if write.mode == "delete" else "rename"
    if how is None:
        raise HookError("policy_denied", f"The hook policy does not let this agent {verb} "
                                         f"{write.path}.")
    target = None
    if write.mode == "rename":
        if not write.new_path:
            raise HookError("new_path_required", "A rename needs new_path.")
        if not (write.path.startswith(injection.WORKSPACE_PREFIX)
                and write.new_path.startswith(injection.WORKSPACE_PREFIX)):
            raise HookError("bad_path", "Only workspace files are renamed, within the "
                                        "workspace.")
        target_rule = policy_rule(session.agent, write.new_path)
        if not any(rule_how(target_rule, m) for m in CONTENT_MODES):
            raise HookError("policy_denied", f"The hook policy does not let this agent write "
                                             f"{write.new_path}.")
        if target_rule.get("approval"):
            how = "proposal"
    file = _existing(session, write.path)
    if file is None or file.head is None or file.is_deleted:
        raise HookError("not_found", f"{write.path} does not exist (or is deleted already).")
    base = write.base_revision if write.base_revision is not None else _default_base(
        file, write.path, seen)
    if write.mode == "rename":
        target = _target(session, write.new_path)
        if target.head is not None and not target.is_deleted:
            raise errors.TargetExists(f"{write.new_path} exists already; nothing was renamed.")
    if how == "proposal":
        _propose(session, file, actor, write, base, result)
    elif write.mode == "delete":
        revision = store.file_delete(file=file, actor=actor, message=message, base_revision=base)
        result.update(status="written", revision=revision.number)
    else:
        tombstone, moved = store.file_rename(file=file, target=target, actor=actor,
                                             message=message, base_revision=base)
        result.update(status="written", revision=tombstone.number, new_revision=moved.number)


def _existing(session: AgentSession, path: str) -> MemoryFile | None:
    """The record of a file an agent names, or None; nothing is created (see `_target`)."""
    agent = session.agent
    if path in layout.AGENT_FILES:
        return store.file_lookup(project=agent.project, scope=MemoryFile.Scope.AGENT,
                                 agent=agent, path=path)
    if path == layout.USER_FILE:
        if session.user is None:
            raise HookError("no_user", "This session has no user, so USER.md has no owner.")
        if not Membership.objects.filter(project=agent.project, user=session.user).exists():
            raise HookError("not_a_member", "The session's user is no longer a member of this "
                                            "project, so their USER.md is not changed.")
        return store.file_lookup(project=agent.project, scope=MemoryFile.Scope.USER,
                                 user=session.user, path=path)
    if path.startswith(injection.WORKSPACE_PREFIX):
        try:
            relative = layout.validate_workspace_path(path[len(injection.WORKSPACE_PREFIX):])
        except ValidationError as exc:
            raise HookError("bad_path", " ".join(exc.messages)) from None
        return store.file_lookup(project=agent.project, scope=MemoryFile.Scope.WORKSPACE,
                                 path=relative)
    raise HookError("bad_path", "Paths are SOUL.md, AGENTS.md, TOOLS.md, USER.md or "
                                "workspace/<relative path>.md.")


# --- Tool and error --------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return next((line for line in (text or "").splitlines() if line.strip()), "")


def _one_line(text: str, limit: int = 300) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hook_event(*, session: AgentSession, kind: str, payload: dict,
               record: IdempotencyRecord | None = None) -> dict:
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
            what = (f"tool `{_one_line(payload.get('name', ''), 80)}`" if kind == "tool"
                    else f"error: {_one_line(_first_line(payload.get('message', '')), 160)}")
            line = f"- {when} session {str(session.id)[:8]} {what}\n"
            try:
                file = _target(session, log_path)
                revision = store.file_append(
                    file=file, addition=line, actor=Actor.for_agent(session.agent, str(session.id)),
                    message=system_message(f"{kind}_hook"))
                outcome.update(logged_to=log_path, revision=revision.number)
            except Refusal as exc:
                outcome.update(log_error=exc.message)
        idempotency.finish(record, 200, outcome)
    return outcome


# --- Proposals -------------------------------------------------------------------------------------


def proposal_approve(*, proposal: Proposal, by, note: str = ""):
    """Apply a pending proposal as the agent's revision; the approver is in the audit trail.
    Returns the revision it wrote: a delete's tombstone, a rename's revision at the new path.

    One transaction holds the proposal's row lock, the state check, the write and the audit
    event, so a double click (or two reviewers at once) applies it once: the second sees it
    approved and gets the same revision back."""
    with transaction.atomic():
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status == Proposal.Status.APPROVED and locked.revision_id:
            return Revision.objects.get(pk=locked.revision_id)
        if locked.status != Proposal.Status.PENDING:
            raise HookError("not_pending", _("This proposal was already decided."))
        file = MemoryFile.objects.select_related("head", "project").get(pk=locked.file_id)
        if locked.mode != "replace" and file.is_deleted:
            # Appending would bring the file back holding only the addition, which nobody
            # proposed; a replace on a deleted file is refused by its stale base already.
            raise HookError("file_deleted", _("The file was deleted after this was proposed: "
                                              "restore it first, or reject the proposal."))
        actor = Actor.for_agent(locked.agent, str(locked.session_id or ""))
        message = (system_message("approved_note", user=by.get_username(), note=note) if note
                   else system_message("approved", user=by.get_username()))
        if locked.mode == "delete":
            revision = store.file_delete(file=file, actor=actor, message=message,
                                         base_revision=locked.base_revision)
        elif locked.mode == "rename":
            try:
                target = store.workspace_file_new(
                    project=file.project,
                    path=locked.new_path.removeprefix(injection.WORKSPACE_PREFIX))
            except ValidationError as exc:
                raise HookError("bad_path", " ".join(exc.messages)) from None
            _tombstone, revision = store.file_rename(file=file, target=target, actor=actor,
                                                     message=message,
                                                     base_revision=locked.base_revision)
        else:
            revision = _apply(file, locked.mode, locked.content, locked.base_revision, actor,
                              message)
        locked.status = Proposal.Status.APPROVED
        locked.decided_by, locked.decided_at = by, timezone.now()
        locked.decision_note, locked.revision = note[:500], revision
        locked.save()
        audit_record(actor=Actor.person(by), action="proposal.approve", project=locked.project,
                     obj=locked, details={"revision": revision.number, "note": note[:500]})
    proposal.refresh_from_db()
    return revision


def proposal_reject(*, proposal: Proposal, by, note: str = "") -> None:
    with transaction.atomic():
        locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status == Proposal.Status.REJECTED:
            return
        if locked.status != Proposal.Status.PENDING:
            raise HookError("not_pending", _("This proposal was already decided."))
        locked.status = Proposal.Status.REJECTED
        locked.decided_by, locked.decided_at = by, timezone.now()
        locked.decision_note = note[:500]
        locked.save()
        audit_record(actor=Actor.person(by), action="proposal.reject", project=locked.project,
                     obj=locked, details={"note": note[:500]})
    proposal.refresh_from_db()


def policy_summary(rule: dict | None) -> dict:
    """What a rule lets an agent do to a file, as runners are told: `writable` and `modes`
    (content writes), `approval`, and how `delete` and `rename` go (direct, proposal, never)."""
    modes = [m for m in CONTENT_MODES if rule_how(rule, m)]
    return {"writable": bool(modes), "modes": modes, "approval": bool((rule or {}).get("approval")),
            "delete": rule_how(rule, "delete") or "never",
            "rename": rule_how(rule, "rename") or "never"}


# --- Sandbox ---------------------------------------------------------------------------------------


def sandbox_files(*, session: AgentSession) -> list[dict]:
    """The files this session was shown, at the revisions it was shown, and what it may write."""
    refs = [(f["path"], f["file_id"], f["revision"]) for section in session.receipt
            for f in section["files"] if f.get("file_id") and f.get("revision")]
    if not refs:
        return []
    query = Q()
    for _path, file_id, number in refs:
        query |= Q(file_id=file_id, number=number)
    revisions = {(str(r.file_id), r.number): r
                 for r in Revision.objects.filter(query).select_related("file")}
    texts = store.revision_texts(session.agent.project, list(revisions.values()))
    # "direct" exactly where the runner's S3 credentials may write (IAM's * and ?, which
    # fnmatch reads alike; the patterns hold no brackets: credentials turn [...] into ?).
    writable = credentials.direct_write_patterns(session.agent)
    out = []
    for path, file_id, number in refs:
        revision = revisions.get((file_id, number))
        if revision is None:
            continue
        rule = policy_rule(session.agent, path)
        out.append({"path": path, "revision": number, "content": texts[revision.pk],
                    **policy_summary(rule),
                    "key": revision.file.key,
                    "direct": any(fnmatch.fnmatchcase(revision.file.key, p)
                                  for p in writable)})
    return out



# --- Reads ----------------------------------------------------------------------------------------

MAX_LISTED = 2000  # files in one listing (files_list); the rest is left off and said so


def _visible(session: AgentSession) -> Q:
    """The files a session's agent may read: its own files, the session user's profile (the
    pre hook injects it), the project's workspace."""
    agent = session.agent
    wanted = Q(scope=MemoryFile.Scope.AGENT, agent=agent) | Q(scope=MemoryFile.Scope.WORKSPACE)
    if session.user is not None and Membership.objects.filter(project=agent.project,
                                                              user=session.user).exists():
        wanted |= Q(scope=MemoryFile.Scope.USER, user=session.user)
    return Q(wanted, project=agent.project)


def files_list(*, session: AgentSession) -> tuple[list[dict], bool]:
    """The live memory files the session's agent may read, with their head revision, size and
    what the hook policy lets it do to each; and whether the list was cut at MAX_LISTED."""
    files = list(MemoryFile.objects.filter(_visible(session), head__isnull=False,
                                           head__is_deletion=False)
                 .select_related("head").order_by("scope", "path")[:MAX_LISTED + 1])
    out = [{"path": f.source_path, "revision": f.head.number, "size": f.head.size,
            **policy_summary(policy_rule(session.agent, f.source_path))}
           for f in files[:MAX_LISTED]]
    return out, len(files) > MAX_LISTED


def file_current(*, session: AgentSession, path: str) -> dict:
    """One file as it stands now (its head's text and number), with what the policy lets the
    agent do to it. A file that does not exist (or is deleted) answers exists=false, so a
    runner can tell "create" from "edit"."""
    path = layout.nfc(path)
    file = _existing(session, path)
    if file is not None and not MemoryFile.objects.filter(_visible(session), pk=file.pk).exists():
        file = None
    answer = {"path": path, **policy_summary(policy_rule(session.agent, path))}
    if file is None or file.head is None or file.is_deleted:
        return {**answer, "exists": False, "revision": file.head.number if file and file.head
                else None, "content": ""}
    current = store.file_read(file)
    return {**answer, "exists": True, "revision": current.revision.number,
            "content": current.text}


# --- Settings ----------------------------------------------------------------------------------------


def validate_policy(data: object) -> dict:
    """A hook policy checked by its schema (`schemas.policy`) and made ready to store: its
    paths NFC, the keys it was given; ValidationError says what is wrong."""
    return schemas.policy(data).stored()


def agent_settings_update(*, agent: Agent, by, manifest: dict | None = None,
                          policy: dict | None = None) -> None:
    with transaction.atomic():
        fields = []
        if manifest is not None:
            agent.manifest = schemas.manifest(manifest).stored()
            fields.append("manifest")
        if policy is not None:
            agent.hook_policy = validate_policy(policy)
            fields.append("hook_policy")
        agent.save(update_fields=fields)
        audit_record(actor=Actor.person(by), action="agent.settings", project=agent.project,
                     obj=agent, details={"changed": fields})
