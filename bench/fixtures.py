"""The data the benchmarks run on: the two projects of the shared world (one whose runner holds
S3 credentials, one whose runner does not), agents with tokens, files and long histories
written in bulk, a test client for the pre hook and its floor, and fresh planner statistics
after each bulk load."""

from __future__ import annotations

import concurrent.futures
import json

QUICK = False  # set by bench/run.py's --quick: a quick run skips analyze()

PARAGRAPH = (
    "The incident analyst reads alerts, correlates them with deploys and writes a short, factual timeline. "
) * 4 + "\n\n"


def text_of(kb: int) -> str:
    return "# Memory\n\n" + PARAGRAPH * max(1, kb * 1024 // len(PARAGRAPH))


def world_create() -> dict:
    """Two projects with the same memory (6 files): in `bench` no runner holds S3 credentials
    (its pre hook lists nothing), in `bench-direct` the runner holds credentials that may write
    the workspace (its pre hook looks at the workspace: a LIST, or the change feed)."""
    from django.contrib.auth import get_user_model

    from projects.audit import Actor
    from projects.runners import credentials

    User = get_user_model()
    admin = User.objects.create_user("bench-admin", password="bench", is_superuser=True)
    employee = User.objects.create_user("bench-employee", password="bench")
    world = {"admin": admin, "employee": employee, "actor": Actor.system("bench")}
    for slug in ("bench", "bench-direct"):
        project, agent, token, token_row = project_with_memory(world, slug)
        if slug == "bench":
            world.update(project=project, agent=agent, token=token)
        else:
            credential, secret = credentials.credentials_issue(token=token_row, by=admin)
            project.refresh_from_db()
            assert project.runner_writable.get("workspace")
            world.update(
                direct_project=project,
                direct_agent=agent,
                direct_token=token,
                direct_keys=(credential.access_key_id, secret),
            )
    return world


def project_with_memory(world: dict, slug: str):
    from projects.audit import Actor
    from projects.memory import store
    from projects.models import Agent, Membership, Project
    from projects.runners import bearer

    project = Project.objects.create(slug=slug, name=slug.title())
    Membership.objects.create(user=world["admin"], project=project, role="admin")
    Membership.objects.create(user=world["employee"], project=project, role="employee")
    agent = Agent.objects.create(project=project, slug="analyst", name="Analyst")
    actor = world["actor"]
    for name, kb in (("SOUL.md", 2), ("AGENTS.md", 4), ("TOOLS.md", 3)):
        store.file_create(
            project=project, scope="agent", agent=agent, path=name, content=text_of(kb), actor=actor
        )
    store.file_create(
        project=project,
        scope="user",
        user=world["employee"],
        path="USER.md",
        content=text_of(1),
        actor=Actor.person(world["employee"]),
    )
    for name in ("decisions/a.md", "incidents/b.md"):
        store.file_create(project=project, scope="workspace", path=name, content=text_of(2), actor=actor)
    row, token = bearer.token_create(agent=agent, name="bench", created_by=world["admin"])
    return project, agent, token, row


def cold_start() -> None:
    """What a process that never assembled these files has: an empty cache (texts, assembled
    prompts, what is kept), no remembered answers, no counted texts. What is kept with the
    revisions in the database (token counts, origins) stays: it is data, found once."""
    from django.core.cache import cache

    from projects.memory import receipts
    from projects.runners import context, injection, tokenizer

    receipts.settle()  # the last call's work after its answer is not this call's
    cache.clear()
    context.forget_answers()
    tokenizer._COUNTS.clear()
    injection._neutralize_remembered.cache_clear()


def settled() -> None:
    """Between timed calls: the last call's work after its answer (a prompt's PUT) is done."""
    from projects.memory import receipts

    receipts.settle()


def hook_client(token: str):
    """A test client and two calls: the pre hook and the floor view, both checked."""
    from django.test import Client

    client = Client()
    body = json.dumps({"user": "bench-employee"})
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def pre(body_of: bool = False, key: str = "", person: bool = True):
        extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
        response = client.post(
            "/api/v1/hooks/pre", body if person else "{}", content_type="application/json", **headers, **extra
        )
        assert response.status_code == 200, response.content[:300]
        return response.json()["prompt"] if body_of else None

    def floor():
        response = client.post("/api/bench/floor", body, content_type="application/json", **headers)
        assert response.status_code == 200, response.content[:300]

    return pre, floor


def agent_with_token(world: dict, project, slug: str, manifest: dict | None = None):
    from projects.models import Agent
    from projects.runners import bearer

    agent = Agent.objects.create(
        project=project, slug=slug, name=slug, **({"manifest": manifest} if manifest else {})
    )
    _, token = bearer.token_create(agent=agent, name="bench", created_by=world["admin"])
    return agent, token


def bulk_files(project, paths: list[str], content: str) -> None:
    """Workspace files as saves leave them (head object, snapshot, records), written in bulk."""
    from projects.memory import layout
    from projects.memory.content import sha256
    from projects.memory.storage import storage_for
    from projects.models import MemoryFile, Revision

    storage = storage_for(project)
    data = content.encode()
    sha = sha256(data)
    files = MemoryFile.objects.bulk_create(
        [
            MemoryFile(
                project=project,
                scope="workspace",
                path=path,
                key=layout.workspace_file_key(project.prefix, path),
            )
            for path in paths
        ]
    )
    revisions = Revision.objects.bulk_create(
        [
            Revision(
                file=f,
                number=1,
                sha256=sha,
                size=len(data),
                author_kind="system",
                author_label="system:bench",
                message="bulk",
                snapshot_key=layout.snapshot_key(project.prefix, f.pk, 1, sha),
            )
            for f in files
        ]
    )

    def put(pair):
        file, revision = pair
        storage.client.put_object(Bucket=storage.bucket_name, Key=revision.snapshot_key, Body=data)
        file.head, file.head_etag = (
            revision,
            storage.client.put_object(Bucket=storage.bucket_name, Key=file.key, Body=data)["ETag"],
        )

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, zip(files, revisions, strict=True)))
    MemoryFile.objects.bulk_update(files, ["head", "head_etag"], batch_size=1000)


def analyze() -> None:
    """Fresh planner statistics after a bulk load, as autovacuum would have them in a
    running system; without them PostgreSQL plans for the empty tables it last saw. A quick
    run's tables are tiny and its figures are not kept: it skips this (seconds each time)."""
    from django.db import connection

    if QUICK:
        return

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # PostgreSQL and SQLite both know it


def file_with_revisions(world: dict, path: str, count: int):
    """A file with `count` revisions. Rows are bulk-written; only the head's and the one
    before's snapshots are put in S3, the only objects the history and diff pages read."""
    import hashlib

    from projects.memory import layout, records
    from projects.memory.storage import storage_for
    from projects.models import MemoryFile, Revision

    project = world["project"]
    file = records.file_ensure(project=project, scope="workspace", path=path)
    storage = storage_for(project)
    rows = []
    for number in range(1, count + 1):
        content = f"# Log\n\nentry {number}\n".encode()
        sha = hashlib.sha256(content).hexdigest()
        rows.append(
            Revision(
                file=file,
                number=number,
                sha256=sha,
                size=len(content),
                author_kind="system",
                author_label="system:bench",
                message=f"entry {number}",
                snapshot_key=layout.snapshot_key(project.prefix, file.pk, number, sha),
            )
        )
    Revision.objects.bulk_create(rows, batch_size=2000)
    for revision in rows[-2:]:
        content = f"# Log\n\nentry {revision.number}\n".encode()
        storage.client.put_object(Bucket=storage.bucket_name, Key=revision.snapshot_key, Body=content)
    head = Revision.objects.get(file=file, number=count)
    etag = storage.client.put_object(
        Bucket=storage.bucket_name, Key=file.key, Body=f"# Log\n\nentry {count}\n".encode()
    )["ETag"]
    MemoryFile.objects.filter(pk=file.pk).update(head=head, head_etag=etag)
    analyze()
    return MemoryFile.objects.get(pk=file.pk)


def log_entry(number: int) -> str:
    return f"- {number:06d}: the nightly export finished; 1,204 rows checked, none rejected."


def log_text(count: int, first: int = 1, window: int = 1_000) -> str:
    """Revision `count`'s text of log_with_revisions: the newest `window` entries."""
    return "\n".join(["# Log", *(log_entry(e) for e in _log_entries(count, first, window))]) + "\n"


def _log_entries(number: int, first: int, window: int) -> range:
    """The entries revision `number` holds: revision 1 brings entries 1..first, each later one
    adds the next entry, and only the newest `window` stay (a log that is trimmed)."""
    newest = first + number - 1
    return range(max(1, newest - window + 1), newest + 1)


def log_with_revisions(
    project, path: str, count: int, *, first: int = 1, window: int = 1_000, search_copies: bool = False
):
    """A workspace log with `count` revisions, each adding one entry (revision 1 brings
    `first`), the newest `window` kept, written in bulk. What a save reads is real: the head
    object and its snapshot in S3, the head's search copy, and every revision's line map as
    the save path stores them (linemaps.encode over its skip base), so an append on top does
    all of a save's work. Older snapshots and search copies are not written (no save reads
    them); with `search_copies`, every older revision has a (short) search copy too, as saves
    leave them."""
    import hashlib

    from projects.memory import layout, linemaps, records
    from projects.memory.storage import storage_for
    from projects.models import LineMap, MemoryFile, Revision, SearchText

    file = records.file_ensure(project=project, scope="workspace", path=path)
    storage = storage_for(project)
    rows = []
    for number in range(1, count + 1):
        # Only the head's text is written (and hashed): no save reads an older one.
        shown = log_text(number, first, window) if number == count else f"{path}:{number}"
        sha = hashlib.sha256(shown.encode()).hexdigest()
        rows.append(
            Revision(
                file=file,
                number=number,
                sha256=sha,
                size=0,
                author_kind="system",
                author_label="system:bench",
                message=f"entry {number}",
                snapshot_key=layout.snapshot_key(project.prefix, file.pk, number, sha),
            )
        )
    Revision.objects.bulk_create(rows, batch_size=2000)
    pks = dict(Revision.objects.filter(file=file).values_list("number", "pk"))

    def ident(entry: int) -> int:
        # The revision that brought an entry, and the entry's line there (after "# Log").
        if entry <= first:
            return linemaps.identity(pks[1], entry)
        number = entry - first + 1
        return linemaps.identity(pks[number], len(_log_entries(number, first, window)))

    maps: dict[int, list[int]] = {0: []}
    header = linemaps.identity(pks[1], 0)
    line_maps = []
    for number in range(1, count + 1):
        idents = [header, *(ident(e) for e in _log_entries(number, first, window))]
        base = linemaps.skip_base(number)
        line_maps.append(
            LineMap(
                revision_id=pks[number],
                file=file,
                number=number,
                base=base,
                lines=len(idents),
                data=linemaps.encode(idents, maps[base]),
            )
        )
        maps[number] = idents
    LineMap.objects.bulk_create(line_maps, batch_size=1000)
    text = log_text(count, first, window)
    data = text.encode()
    Revision.objects.filter(file=file, number=count).update(size=len(data))
    head = Revision.objects.get(file=file, number=count)
    if search_copies:
        SearchText.objects.bulk_create(
            [
                SearchText(file=file, number=number, text=f"entry {number}", is_head=False)
                for number in range(1, count)
            ],
            batch_size=2000,
        )
    SearchText.objects.create(file=file, number=count, text=text, created_at=head.created_at)
    storage.client.put_object(Bucket=storage.bucket_name, Key=head.snapshot_key, Body=data)
    etag = storage.client.put_object(Bucket=storage.bucket_name, Key=file.key, Body=data)["ETag"]
    MemoryFile.objects.filter(pk=file.pk).update(head=head, head_etag=etag)
    analyze()
    return MemoryFile.objects.get(pk=file.pk)
