"""Reads that gather what an agent sees: the files of each manifest section, at the head or
as they were at a moment in the past. Assembly itself is pure (runners.injection)."""

from __future__ import annotations

import datetime as dt
import hashlib

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from projects.memory import lineage, linemaps, reading
from projects.memory.content import within_limit
from projects.memory.errors import StoreError
from projects.models import Agent, MemoryFile, Revision
from projects.runners import injection
from projects.runners.tokenizer import get_tokenizer


def _revision_at(files: list[MemoryFile], at: dt.datetime | None) -> dict:
    """file id -> the revision that was the head at `at` (the current head when at is None)."""
    if at is None:
        return {f.pk: f.head for f in files if f.head is not None}
    found: dict = {}
    for revision in (
        Revision.objects.filter(file__in=files, created_at__lte=at)
        .select_related("file")
        .order_by("file_id", "-number")
    ):
        found.setdefault(revision.file_id, revision)
    return found


def context_files(
    *,
    agent: Agent,
    user,
    manifest: injection.Manifest,
    at: dt.datetime | None = None,
    records: list[MemoryFile] | None = None,
) -> tuple[dict[str, list[injection.SourceFile]], list[dict]]:
    """The files each section of `manifest` draws from, keyed by tag, with their texts, and
    the overlaps (files two sections select: injected once, by the first; `injection.claim`).
    `records`: the agent's, the user's and the workspace's file records with their heads,
    when the caller has just read them (the pre hook's catch-up does)."""
    by_source, overlaps = _chosen(agent=agent, user=user, manifest=manifest, at=at, records=records)
    return _with_texts(agent, by_source), overlaps


def _chosen(
    *,
    agent: Agent,
    user,
    manifest: injection.Manifest,
    at: dt.datetime | None,
    records: list[MemoryFile] | None,
) -> tuple[dict, list[dict]]:
    """tag -> [(file, revision)] each section injects, and the overlaps; no text read."""
    if records is None:
        wanted = Q(project=agent.project, agent=agent, scope=MemoryFile.Scope.AGENT)
        if user is not None:
            wanted |= Q(project=agent.project, user=user, scope=MemoryFile.Scope.USER)
        if any(s.source.startswith(injection.WORKSPACE_PREFIX) for s in manifest.sections):
            wanted |= Q(project=agent.project, scope=MemoryFile.Scope.WORKSPACE)
        records = list(MemoryFile.objects.filter(wanted).select_related("head", "project"))
    heads = _revision_at(records, at)
    live = {
        f.source_path: (f, heads[f.pk])
        for f in records
        if f.pk in heads
        and not heads[f.pk].is_deletion
        and (f.scope != MemoryFile.Scope.USER or f.path == injection.USER_SOURCE)
    }
    chosen, overlaps = injection.claim(manifest, list(live))
    return {tag: [live[path] for path in paths] for tag, paths in chosen.items()}, overlaps


def _writers(by_source: dict) -> dict[tuple, tuple[str, ...]]:
    """(file id, number) -> who wrote the lines of that revision (people, agents, external),
    from the stored line maps and the revisions that introduced each line: two queries for a
    whole prompt. A map that cannot be had says who wrote the revision itself."""
    pairs = [(f, r) for chosen in by_source.values() for f, r in chosen]
    if not pairs:
        return {}
    try:
        maps = lineage.line_maps([(f, r.number) for f, r in pairs])
    except (lineage.MapMissing, StoreError):
        maps = {}
    origins = {linemaps.origin(i)[0] for found in maps.values() for i in found}
    kinds = dict(Revision.objects.filter(pk__in=origins).values_list("pk", "author_kind")) if origins else {}
    out = {}
    for f, r in pairs:
        found = maps.get((f.pk, r.number))
        authors = {kinds.get(linemaps.origin(i)[0]) for i in found} if found else {r.author_kind}
        out[(f.pk, r.number)] = tuple(
            w for w in injection.WRITER_ORDER if w in {injection.WRITERS.get(a) for a in authors}
        )
    return out


def _with_texts(
    agent: Agent, by_source: dict, writers: dict | None = None
) -> dict[str, list[injection.SourceFile]]:
    revisions = {r.pk: r for pairs in by_source.values() for _, r in pairs}
    texts = reading.revision_texts(agent.project, list(revisions.values()))
    writers = writers or {}
    return {
        # A revision larger than a file may be (adopted before adoption refused them) is cut
        # to the limit first: the section's cap would cut it anyway, after counting it all.
        tag: [
            injection.SourceFile(
                path=f.source_path,
                text=within_limit(texts[r.pk])[0],
                revision=r.number,
                file_id=str(f.pk),
                writers=writers.get((f.pk, r.number), ()),
            )
            for f, r in pairs
        ]
        for tag, pairs in by_source.items()
    }


def manifest_warnings(*, agent: Agent, manifest: dict | injection.Manifest) -> dict:
    """What the settings page warns about a manifest, from the records alone (no S3 read):
    files two sections select (`overlaps`), and sections that would inject the hook policy's
    tool or error logs under a large cap (`logs`)."""
    if not isinstance(manifest, injection.Manifest):
        manifest = injection.parse_manifest(manifest)
    paths = [
        f"{injection.WORKSPACE_PREFIX}{p}"
        for p in MemoryFile.objects.filter(
            project=agent.project,
            scope=MemoryFile.Scope.WORKSPACE,
            head__isnull=False,
            head__is_deletion=False,
        ).values_list("path", flat=True)
    ]
    paths += [*injection.AGENT_SOURCES, injection.USER_SOURCE]  # as if each were there
    _chosen, overlaps = injection.claim(manifest, paths)
    policy = agent.hook_policy or {}
    logs = [
        policy[kind]["log"]
        for kind in ("tool", "error")
        if isinstance(policy.get(kind), dict) and policy[kind].get("log")
    ]
    return {"overlaps": overlaps, "logs": injection.log_warnings(manifest, logs)}


# Moments as people type them: ISO (the English pages show 2026-12-04 11:45) and day first
# with dots (the Russian pages show 04.12.2026 11:45). The separators tell them apart.
MOMENT_FORMATS = [
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%Y",
]


def _bad_moment() -> ValidationError:
    return ValidationError(
        _("Give the moment as 2026-12-04 11:45 or 04.12.2026 11:45 (UTC)."), code="bad_time"
    )


def parse_moment(raw: str) -> dt.datetime | None:
    """A moment typed by a person in a format the pages show ('2026-12-01T09:00',
    '2026-12-01 09:00', '01.12.2026 09:00'), UTC unless it says otherwise."""
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        value = parse_datetime(raw)
    except ValueError:  # well-formed but impossible, like month 13
        value = None
    for form in MOMENT_FORMATS if value is None else ():
        try:
            value = dt.datetime.strptime(raw, form)
            break
        except ValueError:
            continue
    if value is None:
        raise _bad_moment()
    if timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    try:  # as UTC: offsets beyond ±15:59 are refused by PostgreSQL, year 1 or 9999 overflow
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise _bad_moment() from None


def build_context(
    *,
    agent: Agent,
    user,
    at: dt.datetime | None = None,
    tokenizer=None,
    manifest: dict | injection.Manifest | None = None,
    records: list[MemoryFile] | None = None,
) -> injection.Assembly:
    """The one path from records to a prompt: simulate view, pre hook and command all use it.
    `manifest` replaces the agent's own for a preview of an unsaved edit (or is the agent's
    own, already parsed, so the pre hook parses it once); `records` as in `context_files`."""
    if not isinstance(manifest, injection.Manifest):
        manifest = injection.parse_manifest(agent.manifest if manifest is None else manifest)
    tokenizer = tokenizer or get_tokenizer()
    by_source, overlaps = _chosen(agent=agent, user=user, manifest=manifest, at=at, records=records)
    # The same manifest over the same revisions (each named by its sha256) assembles the same
    # prompt: kept by those, it is not assembled again (texts read, tokens counted and cut)
    # while nothing it draws from changed.
    key = _assembly_key(manifest, by_source, tokenizer)
    assembly = cache.get(key)
    if assembly is None:
        assembly = injection.assemble(
            manifest, _with_texts(agent, by_source, writers=_writers(by_source)), tokenizer
        )
        cache.set(key, assembly, timeout=ASSEMBLY_SECONDS)
    assembly.overlaps = overlaps
    return assembly


# Kept ten minutes: an entry whose files were erased is never asked for again (its key names
# their revisions) and is gone from every process's cache by then.
ASSEMBLY_SECONDS = 600


def _assembly_key(manifest: injection.Manifest, by_source: dict, tokenizer) -> str:
    parts = [tokenizer.name, repr(manifest)]
    for tag, pairs in by_source.items():
        parts.append(tag)
        parts += [f"{f.pk}:{f.source_path}:{r.number}:{r.sha256}" for f, r in pairs]
    digest = hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
    return f"mgc:assembly:{digest}"
