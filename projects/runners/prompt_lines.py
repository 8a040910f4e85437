"""Which file line each line of an assembled prompt is (pure: no Django, no I/O).

`runners.injection.assemble` builds a prompt from files: section tags, a `### file: <path>`
header before each workspace file, blank lines between parts, truncation (head and tail kept
around a marker line) and defused section tags. Rather than replay those steps, each section
of the prompt is aligned line by line with what its files would give uncut (`expected`): equal
lines are the file's lines; a line that differs but stands where a file line stood (a defused
tag, a line cut in the middle) is that line, marked `altered`; the console's own lines (tags,
headers, the truncation marker, blank joins, the preface before the first section, an untrusted
section's fence note under its tag) are said to be the console's. The same reading
serves a simulation (the files as they are) and a session's stored prompt (the revisions its
receipt names), so a line's origin is the one of that prompt's revisions, not of today's.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from projects.memory.linemaps import lines_of

WORKSPACE_PREFIX = "workspace/"
MARKER = re.compile(r"^\[… \d+ tokens truncated by the console: head and tail kept …\]$")
_EXACT_UP_TO = 2000


@dataclass(frozen=True)
class SourceText:
    """One file a section drew from, with its text (None when the text is gone)."""

    path: str
    file_id: str | None
    revision: int | None
    text: str | None


@dataclass(frozen=True)
class SectionText:
    tag: str
    source: str
    included: bool  # the section is in the prompt (it had text and was not cut away whole)
    files: list[SourceText]


@dataclass(frozen=True)
class PromptLine:
    """One line of the prompt. kind: tag | header | marker | blank | file | unknown | preface
    | fence (the console's note under an untrusted section's tag)."""

    number: int  # 1-based
    text: str
    kind: str
    tag: str = ""
    path: str = ""
    file_id: str | None = None
    revision: int | None = None
    line: int | None = None  # 1-based, in that revision; None when not known
    altered: bool = False  # a defused tag or a cut changed it


@dataclass(frozen=True)
class _Expected:
    text: str
    kind: str  # file | header | blank
    source: SourceText | None = None
    line: int | None = None


def _expected(section: SectionText) -> tuple[list[_Expected], list[SourceText]]:
    """What the section's content would be, uncut, line by line; and the files whose text is
    gone (their lines cannot be expected)."""
    out: list[_Expected] = []
    gone: list[SourceText] = []
    workspace = section.source.startswith(WORKSPACE_PREFIX)
    for f in section.files:
        if f.text is None:
            gone.append(f)
            if workspace:
                if out:
                    out.append(_Expected("", "blank"))
                out.append(_Expected(f"### file: {f.path}", "header", f))
            continue
        if not f.text.strip():
            continue
        if out:
            out.append(_Expected("", "blank"))  # parts are joined by a blank line
        if workspace:
            out.append(_Expected(f"### file: {f.path}", "header", f))
            body, lead = f.text.rstrip(), 0
        else:
            body = f.text.strip("\n")
            lead = len(f.text) - len(f.text.lstrip("\n"))
        out += [_Expected(text, "file", f, lead + i + 1) for i, text in enumerate(body.split("\n"))]
    return out, gone


def _line(number: int, text: str, tag: str, expected: _Expected | None, altered: bool = False) -> PromptLine:
    if expected is None:
        kind = "marker" if MARKER.match(text) else "blank" if not text else "unknown"
        return PromptLine(number, text, kind, tag)
    source = expected.source
    return PromptLine(
        number,
        text,
        expected.kind,
        tag,
        path=source.path if source else "",
        file_id=source.file_id if source else None,
        revision=source.revision if source else None,
        line=expected.line,
        altered=altered and text != expected.text,
    )


def _paired(start: int, actual: list[str], expected: list[_Expected], tag: str) -> list[PromptLine]:
    """A run of prompt lines that differ from the run of file lines they replace: lines before
    a truncation marker are the first file lines, lines after it the last ones."""
    out: list[PromptLine] = []
    cut = next((k for k, text in enumerate(actual) if MARKER.match(text)), None)
    head = actual if cut is None else actual[:cut]
    tail = [] if cut is None else actual[cut + 1 :]
    for k, text in enumerate(head):
        if cut is not None and k == cut - 1 and not text:  # the marker's own line break
            out.append(PromptLine(start + k, text, "blank", tag))
            continue
        out.append(_line(start + k, text, tag, expected[k] if k < len(expected) else None, altered=True))
    if cut is not None:
        out.append(_line(start + cut, actual[cut], tag, None))
        offset = len(expected) - len(tail)
        for k, text in enumerate(tail):
            index = offset + k
            paired = expected[index] if 0 <= index < len(expected) and index >= len(head) else None
            if k == 0 and not text:
                paired = None
            out.append(_line(start + cut + 1 + k, text, tag, paired, altered=True))
    return out


def _section(start: int, actual: list[str], section: SectionText) -> list[PromptLine]:
    expected, gone = _expected(section)
    matcher = difflib.SequenceMatcher(
        None,
        [e.text for e in expected],
        actual,
        autojunk=max(len(expected), len(actual)) > _EXACT_UP_TO,
    )
    out: list[PromptLine] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out += [_line(start + j, actual[j], section.tag, expected[i1 + j - j1]) for j in range(j1, j2)]
        elif op == "replace":
            out += _paired(start + j1, actual[j1:j2], expected[i1:i2], section.tag)
        elif op == "insert":
            out += [_line(start + j, actual[j], section.tag, None) for j in range(j1, j2)]
    return _gone_files(out, gone, section)


def _gone_files(lines: list[PromptLine], gone: list[SourceText], section: SectionText) -> list[PromptLine]:
    """Lines no file text explains, in a section whose texts are partly gone: in the
    workspace, those after a file's header are that file's; elsewhere, with one file gone,
    they are its. Which line of it is not known."""
    if not gone:
        return lines
    workspace = section.source.startswith(WORKSPACE_PREFIX)
    by_path = {f.path: f for f in gone}
    current = gone[0] if not workspace and len(gone) == 1 else None
    out = []
    for line in lines:
        if workspace and line.kind == "header":
            current = by_path.get(line.path)
        elif line.kind == "unknown" and current is not None:
            line = PromptLine(
                line.number,
                line.text,
                "file",
                line.tag,
                path=current.path,
                file_id=current.file_id,
                revision=current.revision,
            )
        out.append(line)
    return out


def _between(index: int, text: str, kind: str = "unknown") -> PromptLine:
    """A line outside every section: the blank line that joins two, the preface, or something
    unknown."""
    return PromptLine(index + 1, text, "blank" if not text else kind)


def _open_at(actual: list[str], tag: str, start: int) -> int:
    """Where the section's opening tag stands: `<tag>`, or fenced `<tag trust=...>`."""
    plain, fenced = f"<{tag}>", f"<{tag} "
    for n in range(start, len(actual)):
        line = actual[n]
        if line == plain or (line.startswith(fenced) and line.endswith(">")):
            return n
    raise ValueError(tag)


def prompt_lines(prompt: str, sections: list[SectionText]) -> list[PromptLine]:
    """Each line of `prompt` with the file line it is, given the sections (in manifest order)
    and their files' texts."""
    actual = lines_of(prompt)
    out: list[PromptLine] = []
    at = 0
    for section in sections:
        if not section.included:
            continue
        try:
            open_at = _open_at(actual, section.tag, at)
            close_at = actual.index(f"</{section.tag}>", open_at + 1)
        except ValueError:
            continue
        out += [_between(n, actual[n], "preface" if not out else "unknown") for n in range(at, open_at)]
        out.append(PromptLine(open_at + 1, actual[open_at], "tag", section.tag))
        first = open_at + 1
        if actual[open_at] != f"<{section.tag}>" and first < close_at:  # fenced: the console's note
            out.append(PromptLine(first + 1, actual[first], "fence", section.tag))
            first += 1
        out += _section(first + 1, actual[first:close_at], section)
        out.append(PromptLine(close_at + 1, actual[close_at], "tag", section.tag))
        at = close_at + 1
    out += [_between(n, actual[n]) for n in range(at, len(actual))]
    return out
