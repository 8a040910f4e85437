""" "Why is this in my prompt?": each line of an assembled prompt (a simulation, or a session's
stored prompt) with its origin: the file and revision it was injected from, the line there,
and through that revision's blame the revision that introduced it (author, agent session).

A stored prompt is read against the revisions its receipt names, so the answer is as of that
session, not as of now. A text erased or expired since is not read: its lines keep the file
and revision from the receipt, and the origin says the text is gone.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from projects.memory import blame, lineage, linemaps
from projects.memory.errors import StoreError
from projects.memory.reading import revision_texts
from projects.models import AgentSession, MemoryFile, Revision
from projects.runners import injection, prompt_lines
from projects.runners.prompt_lines import PromptLine


@dataclass(frozen=True)
class LineOrigin:
    line: PromptLine
    file: MemoryFile | None = None  # the file injected (None: the console's line, or erased)
    origin: blame.Origin | None = None  # the revision that introduced the line
    origin_line: int | None = None  # 1-based, in the origin revision

    @property
    def erased(self) -> bool:
        """A file's line whose file record is gone (a profile erased since)."""
        return self.line.file_id is not None and self.file is None


def sections_of_assembly(assembly: injection.Assembly) -> list[prompt_lines.SectionText]:
    return [
        prompt_lines.SectionText(
            s.tag,
            s.source,
            s.included,
            [prompt_lines.SourceText(f.path, f.file_id, f.revision, f.text) for f in s.files],
        )
        for s in assembly.sections
    ]


def sections_of_receipt(session: AgentSession) -> list[prompt_lines.SectionText]:
    """The sections a session's receipt names, with the texts of the revisions it names (None
    where a text is gone: erased, expired, or storage not answering)."""
    receipt = [s for s in session.receipt or [] if isinstance(s, dict)]
    wanted = {
        (str(f.get("file_id")), f.get("revision"))
        for s in receipt
        for f in s.get("files") or []
        if isinstance(f, dict) and f.get("file_id") and isinstance(f.get("revision"), int)
    }
    ids = {file_id for file_id, _n in wanted}
    revisions = {
        (str(r.file_id), r.number): r
        for r in Revision.objects.filter(
            file_id__in=_uuids(ids), number__in={n for _f, n in wanted}
        ).select_related("file")
        if (str(r.file_id), r.number) in wanted
    }
    live = [r for r in revisions.values() if r.purged_at is None and not r.is_deletion]
    texts: dict[int, str] = {}
    by_project = session.agent.project
    try:
        texts = revision_texts(by_project, live)
    except StoreError:
        texts = {}
    sections = []
    for s in receipt:
        files = []
        for f in s.get("files") or []:
            if not isinstance(f, dict):
                continue
            revision = revisions.get((str(f.get("file_id")), f.get("revision")))
            text = texts.get(revision.pk) if revision is not None else None
            files.append(
                prompt_lines.SourceText(str(f.get("path", "")), f.get("file_id"), f.get("revision"), text)
            )
        sections.append(
            prompt_lines.SectionText(
                str(s.get("tag", "")), str(s.get("source", "")), bool(s.get("tokens")), files
            )
        )
    return sections


def _uuids(values) -> list:
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found


def origin_of_prompt(project, prompt: str, sections: list[prompt_lines.SectionText]) -> list[LineOrigin]:
    """Each line of `prompt` with its origin (see the module's note)."""
    lines = prompt_lines.prompt_lines(prompt, sections)
    files = {
        str(f.pk): f
        for f in MemoryFile.objects.filter(
            project=project, pk__in=_uuids({line.file_id for line in lines if line.file_id})
        ).select_related("head", "project", "agent", "user")
    }
    wanted = {
        (str(line.file_id), line.revision)
        for line in lines
        if line.line is not None and str(line.file_id) in files and isinstance(line.revision, int)
    }
    try:  # the maps of every file and revision the prompt drew from, in one query
        found_maps = lineage.line_maps([(files[f], n) for f, n in sorted(wanted)])
    except lineage.MapMissing:
        found_maps = {}
    maps = {(str(f), n): m for (f, n), m in found_maps.items()}
    idents: dict[int, int] = {}
    for line in lines:
        found = maps.get((str(line.file_id), line.revision))
        if found and line.line is not None and line.line <= len(found):
            idents[line.number] = found[line.line - 1]
    origins = blame.origins_of(project, {linemaps.origin(i)[0] for i in idents.values()})
    out = []
    for line in lines:
        ident = idents.get(line.number)
        pk, index = linemaps.origin(ident) if ident is not None else (None, None)
        out.append(
            LineOrigin(
                line=line,
                file=files.get(str(line.file_id)) if line.file_id else None,
                origin=origins.get(pk) if pk is not None else None,
                origin_line=index + 1 if index is not None else None,
            )
        )
    return out


def assembly_origins(project, assembly: injection.Assembly) -> list[LineOrigin]:
    """A simulated prompt's lines with their origins (the files as assembled)."""
    return origin_of_prompt(project, assembly.prompt, sections_of_assembly(assembly))


def session_origins(session: AgentSession, prompt: str) -> list[LineOrigin]:
    """A session's stored prompt with its origins, as of the revisions its receipt names."""
    return origin_of_prompt(session.agent.project, prompt, sections_of_receipt(session))
