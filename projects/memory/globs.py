"""Globs over memory paths (pure): the manifest's sources, the hook policy's targets, legal
holds and retention rules all name files the same way, `SOUL.md`, `USER.md` or
`workspace/<glob>.md`, where `*` matches within a folder, `**` across folders, `?` one
character and `[...]` one of a set. One reading of them, here."""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

from projects.memory import layout

WORKSPACE_PREFIX = "workspace/"
_GLOB_TOKEN = re.compile(r"\*\*|\*|\?|\[[^\]/]*\]")


def glob_sample(pattern: str, letter: str = "x") -> str:
    """`pattern` with each wildcard (`**`, `*`, `?`, `[...]`) read as `letter`: with "x", a name
    the glob selects; with "", the characters that are not wildcards."""
    return _GLOB_TOKEN.sub(letter, pattern)


def workspace_matches(source: str, paths: list[str]) -> list[str]:
    """Workspace paths (relative, no 'workspace/') a source (`workspace/<glob>`) selects,
    sorted. `workspace/**.md` is every file, `workspace/decisions/*.md` the files directly in
    decisions/."""
    pattern = layout.nfc(source[len(WORKSPACE_PREFIX) :])  # paths are NFC
    regex = _glob_regex(pattern)
    return sorted(p for p in paths if regex.fullmatch(p))


def source_matches(source: str, source_path: str) -> bool:
    """Whether a source (`USER.md`, `AGENTS.md`, `workspace/<glob>`) names a file, given as
    an agent sees its path (`USER.md`, `workspace/notes/a.md`)."""
    source = layout.nfc(source)
    if not source.startswith(WORKSPACE_PREFIX):
        return source == source_path
    if not source_path.startswith(WORKSPACE_PREFIX):
        return False
    return bool(workspace_matches(source, [source_path[len(WORKSPACE_PREFIX) :]]))


def governing_rule(rules: dict | None, path: str) -> tuple[str, dict] | None:
    """The hook-policy rule (its target and itself) that governs a path ('AGENTS.md',
    'workspace/x.md') among `rules` (a policy's "post"), or None.

    The path is read as the store will store it (NFC), so another spelling of the same name
    cannot pass a rule meant for it. Of the globs that match, the most specific wins (the
    most characters that are not wildcards), whatever order the rules were saved in: a rule
    for `workspace/secret/*.md` is not undone by a `workspace/**.md` saved before it."""
    path = layout.nfc(path)
    rules = {layout.nfc(key): rule for key, rule in (rules or {}).items()}  # keys saved before NFC
    if path in rules:
        return path, rules[path]
    if path.startswith(WORKSPACE_PREFIX):
        relative = path[len(WORKSPACE_PREFIX) :]
        matching = [
            pattern
            for pattern in rules
            if pattern.startswith(WORKSPACE_PREFIX) and workspace_matches(pattern, [relative])
        ]
        if matching:
            target = max(matching, key=_strictness(rules))
            return target, rules[target]
    return None


def _strictness(rules: dict):
    """The key ranking matching globs: the most characters that are not wildcards, then the
    fewest `**`, then the one asking approval (the name breaks what ties remain)."""
    return lambda pattern: (
        len(glob_sample(pattern, "")),
        -pattern.count("**"),
        bool(rules[pattern].get("approval")),
        pattern,
    )


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern:
    parts = re.split(r"(\*\*/?|\*|\?|\[[^\]]*\])", pattern)
    out = []
    for part in parts:
        if part in ("**", "**/"):
            out.append("(?:.*/)?" if part == "**/" else ".*")
        elif part == "*":
            out.append("[^/]*")
        elif part == "?":
            out.append("[^/]")
        elif part.startswith("[") and part.endswith("]") and len(part) > 2:
            out.append(fnmatch.translate(part)[4:-3])
        else:
            out.append(re.escape(part))
    return re.compile("".join(out))
