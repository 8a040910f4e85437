"""Two people saving the same file from the same base at the same moment (PostgreSQL)."""

import random
import threading

import pytest
from django.db import connection, connections

from projects.memory import errors, reading, store
from projects.models import MemoryFile, Revision

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks are PostgreSQL's; the suite's second run uses it"
)
def test_two_threads_on_the_same_base_one_wins_one_conflicts(s3, workspace_file, actor):
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def save(name: str) -> None:
        try:
            file = MemoryFile.objects.select_related("head", "project").get(pk=workspace_file.pk)
            barrier.wait(timeout=10)
            results[name] = store.file_save(file=file, content=f"{name}\n", actor=actor, base_revision=1)
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[name] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(name,)) for name in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    wins = {n: r for n, r in results.items() if isinstance(r, Revision)}
    conflicts = {n: r for n, r in results.items() if isinstance(r, errors.SaveConflict)}
    assert len(wins) == 1 and len(conflicts) == 1, results
    ((winner, revision),) = wins.items()
    ((loser, conflict),) = conflicts.items()
    assert revision.number == 2
    assert conflict.head_text == f"{winner}\n" and conflict.your_text == f"{loser}\n"
    assert s3.get(workspace_file.key) == f"{winner}\n".encode()
    assert list(
        Revision.objects.filter(file=workspace_file).values_list("number", flat=True).order_by("number")
    ) == [1, 2]


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks are PostgreSQL's; the suite's second run uses it"
)
def test_8_threads_x_50_saves_with_random_stale_bases(s3, workspace_file, actor):
    """Every accepted save is a revision, every refused one a conflict, numbers are gapless,
    and the bucket's head object is the database's head at the end."""
    threads_n, saves_n = 8, 50
    barrier = threading.Barrier(threads_n)
    outcomes: list[tuple[str, int, object]] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        rng = random.Random(index)
        try:
            barrier.wait(timeout=20)
            for n in range(saves_n):
                file = MemoryFile.objects.select_related("head", "project").get(pk=workspace_file.pk)
                head = file.head.number
                # Mostly the head just read (which may already be stale), sometimes older.
                base = head if rng.random() < 0.7 else max(1, head - rng.randint(1, 3))
                text = f"thread {index} save {n}\n"
                try:
                    result = store.file_save(file=file, content=text, actor=actor, base_revision=base)
                except errors.SaveConflict as conflict:
                    result = conflict
                with lock:
                    outcomes.append((text, base, result))
        finally:
            connections.close_all()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=300)
    assert len(outcomes) == threads_n * saves_n, "a thread died or hung"
    accepted = [(t, b, r) for t, b, r in outcomes if isinstance(r, Revision)]
    refused = [(t, b, r) for t, b, r in outcomes if isinstance(r, errors.SaveConflict)]
    assert len(accepted) + len(refused) == threads_n * saves_n  # nothing else (no errors)
    assert accepted and refused
    # Each accepted save sits exactly on the base it named.
    assert all(r.number == b + 1 for _, b, r in accepted)
    numbers = list(
        Revision.objects.filter(file=workspace_file).order_by("number").values_list("number", flat=True)
    )
    assert numbers == list(range(1, len(accepted) + 2))
    # Every refused save named a base that was no longer the head, and kept its text.
    assert all(c.base_revision == b and c.your_text == t for t, b, c in refused)
    workspace_file.refresh_from_db()
    head = workspace_file.head
    assert head.number == len(accepted) + 1
    assert s3.get(workspace_file.key) == reading.revision_read(head).encode()
    by_number = {r.number: t for t, _, r in accepted}
    assert reading.revision_read(head) == by_number[head.number]
