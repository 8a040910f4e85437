"""The blast radius of poisoning that got through (issue 37, item 4): scan a project's memory
with the poisoning rules (memory.poisoning) as it stands and, with `history`, every stored
revision; for each finding, the revision that introduced the line (blame: its author and agent
session), the sessions whose prompts carried it and the people they served (memory.carried),
and whether it is still there.

A finding is a line, not a revision: the same line kept through ten revisions is one finding
(its identity in the line maps, memory.linemaps), found where it stands now when it is still
there, else in the last revision that held it. Reads only; `governance.poison_scans` runs it in
the background and acts on it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from projects.memory import lineage, linemaps, poisoning
from projects.memory.carried import line_spans, sessions_over
from projects.memory.errors import StoreError
from projects.memory.reading import revision_texts
from projects.models import MemoryFile, Project, Revision

_KINDS = {
    MemoryFile.Scope.AGENT: poisoning.KIND_AGENT,
    MemoryFile.Scope.USER: poisoning.KIND_PROFILE,
    MemoryFile.Scope.WORKSPACE: poisoning.KIND_WORKSPACE,
}


@dataclass
class Finding:
    """One poisoned line and how far it went."""

    file: MemoryFile
    revision: int  # where it was found: the head when it is still there
    line: int  # 1-based, in that revision
    family: str
    reason: str
    excerpt: str  # masked (poisoning.masked_excerpt)
    carrier: str
    ident: int  # the line's identity (linemaps)
    origin: Revision | None = None  # the revision that introduced it
    present: bool = False  # still in the file's head
    sessions: list[dict] = field(default_factory=list)  # {session, agent, user, revision, at}
    people: list[str] = field(default_factory=list)  # usernames those sessions served

    @property
    def key(self) -> str:
        """The same line and family gives the same key on every scan (new findings are those
        whose key the last scan did not have)."""
        raw = f"{self.file.pk}:{self.ident}:{self.family}"
        return hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()

    def as_dict(self) -> dict:
        origin = self.origin
        return {
            "key": self.key,
            "file_id": str(self.file.pk),
            "path": self.file.display_path,
            "revision": self.revision,
            "line": self.line,
            "family": self.family,
            "reason": self.reason,
            "excerpt": self.excerpt,
            "carrier": self.carrier,
            "ident": self.ident,
            "present": self.present,
            "introduced": None
            if origin is None
            else {
                "revision": origin.number,
                "path": origin.file.display_path,
                "author": origin.author_label,
                "author_kind": origin.author_kind,
                "session": origin.session_ref or None,
                "at": origin.created_at.isoformat(),
            },
            "sessions": self.sessions,
            "people": self.people,
        }


def scan_project(project: Project, *, history: bool = False) -> list[Finding]:
    """Every poisoned line of the project's memory (module note), newest files first."""
    files = list(
        MemoryFile.objects.filter(project=project, head__isnull=False)
        .select_related("head", "project", "agent", "user")
        .order_by("scope", "path")
    )
    found: dict[tuple, Finding] = {}
    for file in files:
        for finding in _file_findings(file, history=history):
            found.setdefault((file.pk, finding.ident, finding.family), finding)
    findings = list(found.values())
    _with_origins(project, findings)
    for finding in findings:
        _with_sessions(finding)
    return findings


def _revisions(file: MemoryFile, history: bool) -> list[Revision]:
    """The head first (a line still there is found there), then older revisions, newest first."""
    head = file.head
    if not history:
        return [] if head.is_deletion else [head]
    return list(
        Revision.objects.filter(file=file, is_deletion=False, purged_at__isnull=True)
        .exclude(snapshot_key="")
        .order_by("-number")
    )


def _file_findings(file: MemoryFile, *, history: bool) -> list[Finding]:
    revisions = _revisions(file, history)
    if not revisions:
        return []
    try:
        texts = revision_texts(file.project, revisions)
    except StoreError:
        return []
    head_map = set(lineage.line_map(file, file.head.number)) if not file.head.is_deletion else set()
    out = []
    for revision in revisions:
        hits = poisoning.scan(texts[revision.pk], kind=_KINDS.get(file.scope, poisoning.KIND_WORKSPACE))
        if not hits:
            continue
        idents = lineage.line_map(file, revision.number)
        for hit in hits:
            if not 1 <= hit.line <= len(idents):
                continue
            ident = idents[hit.line - 1]
            out.append(
                Finding(
                    file=file,
                    revision=revision.number,
                    line=hit.line,
                    family=hit.family,
                    reason=hit.reason,
                    excerpt=hit.excerpt,
                    carrier=hit.carrier,
                    ident=ident,
                    present=ident in head_map,
                )
            )
    return out


def _with_origins(project: Project, findings: list[Finding]) -> None:
    wanted = {linemaps.origin(f.ident)[0] for f in findings}
    origins = {
        r.pk: r
        for r in Revision.objects.filter(pk__in=wanted, file__project=project).select_related(
            "file", "file__agent", "file__user"
        )
    }
    for finding in findings:
        finding.origin = origins.get(linemaps.origin(finding.ident)[0])


def _with_sessions(finding: Finding) -> None:
    rows = sessions_over(line_spans(finding.file, finding.ident))
    seen: dict[str, dict] = {}
    for row in rows:
        session = row.session
        key = str(session.pk)
        if key in seen:
            continue
        seen[key] = {
            "session": key,
            "agent": session.agent.slug,
            "user": session.user.get_username() if session.user_id else None,
            "revision": row.revision,
            "at": row.created_at.isoformat(),
        }
    finding.sessions = sorted(seen.values(), key=lambda s: s["at"])
    finding.people = sorted({s["user"] for s in finding.sessions if s["user"]})
