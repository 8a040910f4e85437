"""What a session's agent may read, and how: the files its pre hook showed it, for a sandbox
folder (`sandbox_files`); the memory files as they stand (`files_list`, `file_current`), for
runtimes that read one command at a time. Each file comes with what the hook policy lets the
agent do to it (`policy.policy_summary`)."""

from __future__ import annotations

import fnmatch

from django.db.models import Q

from projects.memory import layout, reading
from projects.models import AgentSession, Membership, MemoryFile, Revision
from projects.runners import credentials, policy, targets


def sandbox_files(*, session: AgentSession) -> list[dict]:
    """The files this session was shown, at the revisions it was shown, and what it may write."""
    refs = [
        (f["path"], f["file_id"], f["revision"])
        for section in session.receipt
        for f in section["files"]
        if f.get("file_id") and f.get("revision")
    ]
    if not refs:
        return []
    query = Q()
    for _path, file_id, number in refs:
        query |= Q(file_id=file_id, number=number)
    revisions = {(str(r.file_id), r.number): r for r in Revision.objects.filter(query).select_related("file")}
    texts = reading.revision_texts(session.agent.project, list(revisions.values()))
    # "direct" exactly where the runner's S3 credentials may write (IAM's * and ?, which
    # fnmatch reads alike; the patterns hold no brackets: credentials turn [...] into ?) and
    # the file's own rule allows a replace: a stricter rule inside a granted glob (an
    # append-only log) is denied there, or refused at adoption, so it goes through the hook.
    writable = credentials.direct_write_patterns(session.agent)
    out = []
    for path, file_id, number in refs:
        revision = revisions.get((file_id, number))
        if revision is None:
            continue
        rule = policy.policy_rule(session.agent, path)
        out.append(
            {
                "path": path,
                "revision": number,
                "content": texts[revision.pk],
                **policy.policy_summary(rule),
                "key": revision.file.key,
                "direct": credentials.direct_write_allowed(path, rule)
                and any(fnmatch.fnmatchcase(revision.file.key, p) for p in writable),
            }
        )
    return out


MAX_LISTED = 2000  # files in one listing (files_list); the rest is left off and said so


def _visible(session: AgentSession) -> Q:
    """The files a session's agent may read: its own files, the session user's profile (the
    pre hook injects it), the project's workspace."""
    agent = session.agent
    wanted = Q(scope=MemoryFile.Scope.AGENT, agent=agent) | Q(scope=MemoryFile.Scope.WORKSPACE)
    if (
        session.user is not None
        and Membership.objects.filter(project=agent.project, user=session.user).exists()
    ):
        wanted |= Q(scope=MemoryFile.Scope.USER, user=session.user)
    return Q(wanted, project=agent.project)


def files_list(*, session: AgentSession) -> tuple[list[dict], bool]:
    """The live memory files the session's agent may read, with their head revision, size and
    what the hook policy lets it do to each; and whether the list was cut at MAX_LISTED."""
    files = list(
        MemoryFile.objects.filter(_visible(session), head__isnull=False, head__is_deletion=False)
        .select_related("head")
        .order_by("scope", "path")[: MAX_LISTED + 1]
    )
    out = [
        {
            "path": f.source_path,
            "revision": f.head.number,
            "size": f.head.size,
            **policy.policy_summary(policy.policy_rule(session.agent, f.source_path)),
        }
        for f in files[:MAX_LISTED]
    ]
    return out, len(files) > MAX_LISTED


def file_current(*, session: AgentSession, path: str) -> dict:
    """One file as it stands now (its head's text and number), with what the policy lets the
    agent do to it. A file that does not exist (or is deleted) answers exists=false, so a
    runner can tell "create" from "edit"."""
    path = layout.nfc(path)
    file = targets.file_named(session, path)
    if file is not None and not MemoryFile.objects.filter(_visible(session), pk=file.pk).exists():
        file = None
    answer = {"path": path, **policy.policy_summary(policy.policy_rule(session.agent, path))}
    if file is None or file.head is None or file.is_deleted:
        return {
            **answer,
            "exists": False,
            "revision": file.head.number if file and file.head else None,
            "content": "",
        }
    current = reading.file_read(file)
    return {**answer, "exists": True, "revision": current.revision.number, "content": current.text}
