"""The post hook at its floor (issue 43): an append of one line to a workspace log with 1,000
revisions and a replace of a 64 KB file, through the runner API in process with an
Idempotency-Key as a runner sends, each beside its floor (bench/urls.py `post_floor`: the
bearer lookup, one conditional PUT of the same bytes to the same S3 and one row INSERT in one
transaction, under the same middleware). In the same run, the same posts with the poisoning
scanner off and with the provenance record (the line map a save stores) off: their share of
the post. Then how the post hook grows with the file's history and the project's files."""

from __future__ import annotations

from itertools import count

from bench.fixtures import PARAGRAPH, bulk_files, log_entry, log_with_revisions
from bench.scanner import runner_session, scanner_off, sixty_four_kb
from bench.table import Table, interleaved, ms, p50


class provenance_off:
    """The provenance record switched off on the save path, in this process only (for the
    bench's share row): no line map is stored for the revision."""

    def __enter__(self):
        from projects.memory import lineage

        self.record = lineage.record
        lineage.record = lambda *args, **kwargs: None

    def __exit__(self, *exc):
        from projects.memory import lineage

        lineage.record = self.record


class _Plain:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def bench_post(table: Table, world: dict, n: int, revisions: int) -> None:
    project, _agent, send = runner_session(world, "post")
    numbers = count(1)
    lanes = (("product", _Plain), ("unscanned", scanner_off), ("unrecorded", provenance_off))
    logs = {lane: log_with_revisions(project, f"bench/{lane}-log.md", revisions) for lane, _ in lanes}

    def check(result: dict, what: str) -> dict:
        if result.get("status") != "written":
            table.wrong.append(f"post hook {what}: {result}")
        return result

    def appender(lane: str, switch):
        path = f"workspace/bench/{lane}-log.md"

        def append():
            number = next(numbers)
            with switch():
                check(
                    send(
                        {"path": path, "mode": "append", "content": log_entry(10_000_000 + number)},
                        f"post-{number}",
                    ),
                    "append",
                )

        return append

    entries = count(20_000_000)
    send.floor({"name": "log.md", "content": _head_text(logs["product"])})

    def append_floor():
        send.floor({"name": "log.md", "append": log_entry(next(entries)) + "\n"})

    appends = [appender(lane, switch) for lane, switch in lanes]
    product, floor, unscanned, unrecorded = _four(interleaved([appends[0], append_floor, *appends[1:]], n))
    revision = logs["product"].revisions.count()
    if revision != revisions + n + 3:
        table.wrong.append(f"append: {revision} revisions, expected {revisions + n + 3}")
    _rows(
        table,
        f"post hook: append one line to a workspace log with {revisions:,} revisions",
        product,
        floor,
        unscanned,
        unrecorded,
    )

    # 64 KB replaces: every call a new text (made before the clock starts).
    texts = iter([sixty_four_kb(k) for k in range(4 * (n + 3))])
    bases: dict[str, int | None] = {}

    def replacer(lane: str, switch):
        path = f"workspace/bench/{lane}-runbook.md"

        def replace():
            number = next(numbers)
            write = {
                "path": path,
                "mode": "replace",
                "content": next(texts),
                "base_revision": bases.get(path),
            }
            with switch():
                bases[path] = check(send(write, f"post-{number}"), "64 KB replace").get("revision")

        return replace

    def replace_floor():
        send.floor({"name": "runbook.md", "content": next(texts)})

    replaces = [replacer(lane, switch) for lane, switch in lanes]
    product, floor, unscanned, unrecorded = _four(interleaved([replaces[0], replace_floor, *replaces[1:]], n))
    _rows(table, "post hook: replace a 64 KB file (every line new)", product, floor, unscanned, unrecorded)


def _head_text(file) -> str:
    from projects.memory.reading import revision_read

    return revision_read(file.head)


def _four(results):
    return results[0], results[1], results[2], results[3]


def _rows(table: Table, what: str, product, floor, unscanned, unrecorded) -> None:
    ratio = p50(product) / p50(floor)
    table.add(
        what,
        ms(product),
        "floor, bearer token + one conditional PUT of the same bytes + one row in one "
        "transaction, same middleware: " + ms(floor),
        ratio,
        "<= 2x (p50)",
        ratio <= 2,
    )
    scanner = p50(product) - p50(unscanned)
    provenance = p50(product) - p50(unrecorded)
    table.add(
        "  in it: poisoning scanner, provenance record (line map)",
        f"scanner {scanner:.2f} ms, provenance record {provenance:.2f} ms of p50 {p50(product):.2f} ms",
        f"the post without the scanner: {ms(unscanned)}; without the line map: {ms(unrecorded)}",
        None,
        "",
        None,
    )


# --- Growth ----------------------------------------------------------------------------------------


def bench_post_growth(table: Table, world: dict, n: int, revisions: int, files: int) -> None:
    """The same append (one line to a 100-line log) on a file with 1 revision and with
    `revisions`, and in a project with 1 file and with `files` more: the history and the
    project's size must not slow a post down."""
    lanes = []
    for name, history, others in (
        ("post-small", 1, 0),
        ("post-history", revisions, 0),
        ("post-files", 1, files),
    ):
        project, _agent, send = runner_session(world, name)
        log_with_revisions(project, "bench/log.md", history, first=100 if history == 1 else 1, window=100)
        if others:
            bulk_files(project, [f"notes/{i:04d}.md" for i in range(others)], "# Note\n\n" + PARAGRAPH)
        lanes.append(_growth_append(table, send))
    small, history, many = interleaved(lanes, n)
    base = p50(small)
    for label, times in (
        (f"{revisions:,} revisions of the file", history),
        (f"{files:,} more files in the project", many),
    ):
        ratio = p50(times) / base
        table.add(
            f"post hook append, {label}",
            ms(times),
            f"1 revision, 1 file: {ms(small)}",
            ratio,
            "<= 1.2x",
            ratio <= 1.2,
        )


def _growth_append(table: Table, send):
    numbers = count(1)

    def append():
        number = next(numbers)
        result = send(
            {"path": "workspace/bench/log.md", "mode": "append", "content": log_entry(30_000_000 + number)},
            f"grow-{number}",
        )
        if result.get("status") != "written":
            table.wrong.append(f"growth append: {result}")

    return append
