"""Reads that gather what an agent sees: the files of each manifest section, at the head or
as they were at a moment in the past. Assembly itself is pure (runners.injection)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from projects.memory import lineage, linemaps, reading, receipts
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


def _writers(by_source: dict) -> tuple[dict[tuple, tuple[str, ...]], dict[int, list[str]]]:
    """(file id, number) -> who wrote the lines of that revision (people, agents, external):
    kept with the revision once found (`Revision.origin`), else from the stored line maps and
    the revisions that introduced each line, two queries for a whole prompt. A map that
    cannot be had says who wrote the revision itself. Also returns what was found from the
    maps now ({revision id: origin}), for the caller to keep."""
    pairs = [(f, r) for chosen in by_source.values() for f, r in chosen]
    out = {(f.pk, r.number): tuple(r.origin) for f, r in pairs if r.origin is not None}
    pairs = [(f, r) for f, r in pairs if r.origin is None]
    if not pairs:
        return out, {}
    try:
        maps = lineage.line_maps([(f, r.number) for f, r in pairs])
    except (lineage.MapMissing, StoreError):
        maps = {}
    origins = {linemaps.origin(i)[0] for found in maps.values() for i in found}
    kinds = dict(Revision.objects.filter(pk__in=origins).values_list("pk", "author_kind")) if origins else {}
    found_now = {}
    for f, r in pairs:
        found = maps.get((f.pk, r.number))
        authors = {kinds.get(linemaps.origin(i)[0]) for i in found} if found else {r.author_kind}
        out[(f.pk, r.number)] = tuple(
            w for w in injection.WRITER_ORDER if w in {injection.WRITERS.get(a) for a in authors}
        )
        if found is not None:  # from the maps: what it will always be (a fallback is not kept)
            found_now[r.pk] = list(out[(f.pk, r.number)])
    return out, found_now


def _with_texts(
    agent: Agent, by_source: dict, writers: dict | None = None, texts: dict | None = None, tokenizer=None
) -> dict[str, list[injection.SourceFile]]:
    """The section files, with their texts (`texts` when the caller read them already), who
    wrote them and their token counts as kept with each revision for `tokenizer`."""
    if texts is None:
        revisions = {r.pk: r for pairs in by_source.values() for _, r in pairs}
        texts = reading.revision_texts(agent.project, list(revisions.values()))
    writers = writers or {}
    name = tokenizer.name if tokenizer is not None else None
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
                tokens=(r.tokens or {}).get(name) if name else None,
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
        # The texts' GETs are in flight while the database says who wrote their lines.
        revisions = {r.pk: r for pairs in by_source.values() for _, r in pairs}
        texts = reading.revision_texts_start(agent.project, list(revisions.values()))
        writers, origins = _writers(by_source)
        files = _with_texts(agent, by_source, writers=writers, texts=texts(), tokenizer=tokenizer)
        assembly = injection.assemble(manifest, files, tokenizer)
        _keep_found(by_source, files, assembly, tokenizer, origins)
        cache.set(key, assembly, timeout=ASSEMBLY_SECONDS)
    assembly.overlaps = overlaps
    return assembly


def _keep_found(
    by_source: dict, files: dict, assembly: injection.Assembly, tokenizer, origins: dict[int, list[str]]
) -> None:
    """Keep with each revision what was found now and stays true of it: the tokens of its part
    of a prompt (once per encoding) and who wrote its lines, off the answer's path
    (memory.receipts.after_answer)."""
    counted = {
        (f["file_id"], f["revision"]): f["tokens"] for section in assembly.receipt for f in section["files"]
    }
    new: dict[int, dict] = {pk: {"origin": origin} for pk, origin in origins.items()}
    for tag, pairs in by_source.items():
        for (record, revision), source in zip(pairs, files.get(tag, []), strict=True):
            found = counted.get((str(record.pk), revision.number))
            if source.tokens is None and found is not None:
                revision.tokens = {**(revision.tokens or {}), tokenizer.name: found}
                new.setdefault(revision.pk, {})["tokens"] = revision.tokens
            if revision.pk in origins:
                revision.origin = origins[revision.pk]
    if new:
        receipts.after_answer(lambda: _save_found(new))


def _save_found(found: dict[int, dict]) -> None:
    for pk, fields in found.items():
        Revision.objects.filter(pk=pk).update(**fields)


# Kept ten minutes: an entry whose files were erased is never asked for again (its key names
# their revisions) and is gone from every process's cache by then.
ASSEMBLY_SECONDS = 600


# --- The warm pre hook's answers ---------------------------------------------------------------
#
# A pre hook whose files have the same heads as an earlier one's, for the same agent, person
# and manifest, returns the same prompt: revisions never change once written, and every save,
# delete, rename, adoption and erasure moves a file's head (or removes its record) in its own
# transaction. So the answer is remembered in this process under those heads (one small read,
# `CatchUp.heads`), without the texts, bounded in bytes; an entry whose heads moved is never
# asked for again and ages out.


@dataclass(frozen=True)
class Remembered:
    assembly: injection.Assembly  # as remembered, without its sections (`sections` is empty)
    truncated: bool  # a section was cut
    profiles: tuple[str, ...]  # ids of the profiles (USER.md) it injected


_ANSWERS: OrderedDict[tuple, Remembered] = OrderedDict()
_ANSWER_SIZES: dict[tuple, int] = {}
_ANSWERS_LOCK = threading.Lock()
_answers_bytes = 0
_ANSWERED: set[tuple] = set()  # (agent, person, manifest, encoding) of the answers remembered
_ANSWERED_MAX = 50_000


def answer_base(*, agent: Agent, user, manifest: injection.Manifest) -> tuple:
    """What a pre hook's prompt is a function of but the heads: the agent, the person, the
    manifest and the encoding."""
    return (agent.pk, user.pk if user is not None else None, manifest, get_tokenizer().name)


def answer_key(base: tuple, heads) -> tuple:
    """`answer_base` and the heads of the files it may draw from ((file id, head id) pairs)."""
    return (*base, frozenset(heads))


def any_remembered(base: tuple) -> bool:
    """Whether this process remembers any answer for this agent, person, manifest and
    encoding (whatever the heads): when not, the small read of the heads would find nothing,
    and the caller reads the records at once."""
    return base in _ANSWERED


def remembered(key: tuple) -> Remembered | None:
    with _ANSWERS_LOCK:
        found = _ANSWERS.get(key)
        if found is not None:
            _ANSWERS.move_to_end(key)
        return found


def answer_of(assembly: injection.Assembly) -> Remembered:
    """The answer with the whole assembly (this call's); `remember` keeps it without texts."""
    return Remembered(
        assembly=assembly,
        truncated=any(s.truncated for s in assembly.sections),
        profiles=tuple(
            f.file_id
            for section in assembly.sections
            for f in section.files
            if f.path == injection.USER_SOURCE and f.file_id
        ),
    )


def remember(key: tuple, assembly: injection.Assembly) -> Remembered:
    global _answers_bytes
    answer = answer_of(assembly)
    size = len(assembly.prompt) * 2 + 512 * (1 + len(assembly.receipt))
    budget = settings.MGC_PROMPT_MEMO_BYTES
    if size > budget // 4:
        return answer  # one answer does not push out many
    with _ANSWERS_LOCK:
        if key not in _ANSWERS:
            _ANSWERS[key] = dataclasses.replace(answer, assembly=dataclasses.replace(assembly, sections=[]))
            _ANSWER_SIZES[key] = size
            _answers_bytes += size
            if len(_ANSWERED) > 4 * _ANSWERED_MAX:
                _ANSWERED.clear()
            _ANSWERED.add(key[:-1])  # its answer_base
        while _answers_bytes > budget and _ANSWERS:
            old, _value = _ANSWERS.popitem(last=False)
            _answers_bytes -= _ANSWER_SIZES.pop(old)
    return answer


def forget_answers() -> None:
    """Empty this process's remembered answers (a cold start, as the bench measures one)."""
    global _answers_bytes
    with _ANSWERS_LOCK:
        _ANSWERS.clear()
        _ANSWER_SIZES.clear()
        _ANSWERED.clear()
        _answers_bytes = 0


def _assembly_key(manifest: injection.Manifest, by_source: dict, tokenizer) -> str:
    parts = [tokenizer.name, repr(manifest)]
    for tag, pairs in by_source.items():
        parts.append(tag)
        parts += [f"{f.pk}:{f.source_path}:{r.number}:{r.sha256}" for f, r in pairs]
    digest = hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
    return f"mgc:assembly:{digest}"
