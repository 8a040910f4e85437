"""Two people saving the same file from the same base at the same moment (PostgreSQL)."""

import threading

import pytest
from django.db import connection, connections

from projects import store
from projects.models import MemoryFile, Revision

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="row locks are PostgreSQL's; the suite's second run uses it")
def test_two_threads_on_the_same_base_one_wins_one_conflicts(s3, workspace_file, actor):
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def save(name: str) -> None:
        try:
            file = MemoryFile.objects.select_related("head", "project").get(pk=workspace_file.pk)
            barrier.wait(timeout=10)
            results[name] = store.file_save(file=file, content=f"{name}\n", actor=actor,
                                            base_revision=1)
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
    conflicts = {n: r for n, r in results.items() if isinstance(r, store.SaveConflict)}
    assert len(wins) == 1 and len(conflicts) == 1, results
    (winner, revision), = wins.items()
    (loser, conflict), = conflicts.items()
    assert revision.number == 2
    assert conflict.head_text == f"{winner}\n" and conflict.your_text == f"{loser}\n"
    assert s3.get(workspace_file.key) == f"{winner}\n".encode()
    assert list(Revision.objects.filter(file=workspace_file).values_list("number", flat=True)
                .order_by("number")) == [1, 2]
