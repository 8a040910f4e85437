"""Fill in line maps for the history saved before them, and the index of what each session
carried from its receipt. Both read only the database, in batches:

- Line maps need each revision's text. The console keeps one search copy per revision in the
  database (SearchText), so the maps are computed from those, in revision order, with the same
  function every save uses (memory.linemaps.fill). S3 is not read here: a migration that needs
  the bucket fails a deploy whenever storage is slow or away, and would read every snapshot
  ever written. A file whose history reaches a revision without a search copy (saved before
  search existed, or whose text was purged) stops there; the rest of it is filled in from S3 the
  first time a blame or a save needs it (memory.lineage.fill_file), and texts that are gone for
  good give maps marked approximate.
- SessionFile rows come from each session's receipt (memory.receipts.carried_files); later
  sessions are indexed by their post hook, or by the first question about where a line went.
"""

from django.db import migrations

from projects.memory import linemaps, receipts

FILES_A_BATCH = 200
REVISIONS_A_BATCH = 500
SESSIONS_A_BATCH = 1000


class _Backfill:
    def __init__(self, apps):
        self.Revision = apps.get_model("projects", "Revision")
        self.LineMap = apps.get_model("projects", "LineMap")
        self.SearchText = apps.get_model("projects", "SearchText")
        self.MemoryFile = apps.get_model("projects", "MemoryFile")
        self.done: set = set()
        self.busy: set = set()
        self.stored = 0

    def run(self) -> int:
        last = None
        while True:
            files = self.MemoryFile.objects.order_by("pk")
            if last is not None:
                files = files.filter(pk__gt=last)
            batch = list(files.values_list("pk", flat=True)[:FILES_A_BATCH])
            if not batch:
                return self.stored
            for file_id in batch:
                self.file(file_id)
            last = batch[-1]

    def rows(self, file_id, numbers=None) -> dict:
        found = self.LineMap.objects.filter(file_id=file_id)
        if numbers is not None:
            found = found.filter(number__in=numbers)
        return {n: (base, bytes(data)) for n, base, data in found.values_list("number", "base", "data")}

    def file(self, file_id) -> None:
        """Fill one file's maps from its first missing one; stop at a text the database lacks
        (a file a rename brought lines from is filled first)."""
        if file_id in self.done or file_id in self.busy:
            return
        self.busy.add(file_id)
        try:
            self._file(file_id)
        finally:
            self.busy.discard(file_id)
            self.done.add(file_id)

    def _file(self, file_id) -> None:
        rows = self.rows(file_id)
        texts: dict[int, str] = {}
        after = 0
        while True:
            revisions = list(
                self.Revision.objects.filter(file_id=file_id, number__gt=after).order_by("number")[
                    :REVISIONS_A_BATCH
                ]
            )
            if not revisions:
                return
            after = revisions[-1].number
            todo = [r for r in revisions if r.number not in rows]
            if not todo:
                continue
            wanted = {r.number for r in todo} | {r.number - 1 for r in todo}
            wanted |= {r.restored_from for r in todo if r.restored_from}
            wanted |= {r.merged_base for r in todo if r.merged_base}
            texts.update(
                self.SearchText.objects.filter(file_id=file_id, number__in=wanted - set(texts)).values_list(
                    "number", "text"
                )
            )
            deletions = set(
                self.Revision.objects.filter(file_id=file_id, number__in=wanted, is_deletion=True).values_list(
                    "number", flat=True
                )
            )
            by_number = {r.number: r for r in todo}

            def text_of(n, texts=texts, deletions=deletions):
                return "" if n in deletions else texts.get(n)

            new_rows = linemaps.fill(
                [
                    linemaps.Facts(
                        pk=r.pk,
                        number=r.number,
                        is_deletion=r.is_deletion,
                        restored_from=r.restored_from,
                        merged_base=r.merged_base,
                        renamed=r.renamed_from_id is not None,
                    )
                    for r in todo
                ],
                rows,
                text_of,
                lambda facts, by_number=by_number: self.renamed_source(by_number[facts.number]),
                stop_at_gap=True,
            )
            self.LineMap.objects.bulk_create(
                [
                    self.LineMap(
                        revision_id=by_number[row.number].pk,
                        file_id=file_id,
                        number=row.number,
                        base=row.base,
                        lines=row.lines,
                        data=row.data,
                        approximate=row.approximate,
                    )
                    for row in new_rows
                ],
                ignore_conflicts=True,
            )
            self.stored += len(new_rows)
            if len(new_rows) < len(todo):
                return  # a text the database does not hold: the rest is filled lazily
            keep = {n for n in texts if n > after - 2}  # the next batch's parent
            for n in list(texts):
                if n not in keep:
                    del texts[n]

    def renamed_source(self, revision):
        origin = (
            self.Revision.objects.filter(
                file_id=revision.renamed_from_id,
                sha256=revision.sha256,
                is_deletion=False,
                pk__lt=revision.pk,
            )
            .order_by("-number")
            .first()
        )
        if origin is None:
            return None
        self.file(origin.file_id)  # the source's maps first
        text = (
            self.SearchText.objects.filter(file_id=origin.file_id, number=origin.number)
            .values_list("text", flat=True)
            .first()
        )
        rows = self.rows(origin.file_id, linemaps.chain(origin.number))
        try:
            return linemaps.lines_of(text), linemaps.rebuild(rows, origin.number)[origin.number]
        except (KeyError, TypeError):  # not filled (a text missing there too)
            return None


def backfill_line_maps(apps, schema_editor=None) -> int:
    return _Backfill(apps).run()


def backfill_session_files(apps, schema_editor=None) -> int:
    """Index every session recorded so far (memory.carried.index_sessions does the same for
    later ones): its receipt's files as SessionFile rows, and the session marked indexed."""
    AgentSession = apps.get_model("projects", "AgentSession")
    SessionFile = apps.get_model("projects", "SessionFile")
    stored = 0
    while True:
        batch = list(
            AgentSession.objects.filter(carried_indexed=False)
            .order_by("created_at", "pk")
            .values_list("pk", "created_at", "receipt")[:SESSIONS_A_BATCH]
        )
        if not batch:
            return stored
        rows = [
            SessionFile(
                session_id=pk,
                file_ref=f["file_id"],
                path=f["path"],
                revision=f["revision"],
                tag=f["tag"],
                cut=f["cut"],
                created_at=created_at,
            )
            for pk, created_at, receipt in batch
            for f in receipts.carried_files(receipt)
        ]
        SessionFile.objects.bulk_create(rows, ignore_conflicts=True)
        AgentSession.objects.filter(pk__in=[pk for pk, _at, _r in batch]).update(carried_indexed=True)
        stored += len(rows)


def forwards(apps, schema_editor):
    backfill_line_maps(apps)
    backfill_session_files(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0028_provenance"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
