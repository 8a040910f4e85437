"""What a save would refuse, adoption refuses too: objects written straight to the bucket that
are too large, not UTF-8 text, or under a name the console refuses are recorded as refused
writes, never injected or shown, the recorded head stays the head, and admins delete them.
Real SeaweedFS, the runner's own S3 credentials."""

import re
import time

import pytest
from django.conf import settings
from django.urls import reverse

from projects.audit import Actor
from projects.memory import adoption, layout, reconcile, store
from projects.models import AuditEvent, MemoryFile, RefusedWrite, Revision
from projects.runners import bearer, credentials, prehook
from runnerkit.direct import DirectStorage

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024


@pytest.fixture
def runner(s3, project, agent, person, admin):
    system = Actor.system("t")
    store.file_create(
        project=project, scope="agent", agent=agent, path="SOUL.md", content="You are calm.\n", actor=system
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="Maria prefers UTC.\n",
        actor=Actor.person(person),
    )
    store.file_create(
        project=project, scope="workspace", path="incidents/a.md", content="# Incident A\n", actor=system
    )
    token, raw = bearer.token_create(agent=agent, name="direct", created_by=admin)
    credential, secret = credentials.credentials_issue(token=token, by=admin)
    direct = DirectStorage(
        endpoint_url=s3.direct_url, access_key_id=credential.access_key_id, secret_access_key=secret
    )
    return {"token": raw, "direct": direct}


def _pre(agent, person):
    started = time.perf_counter()
    session, assembly = prehook.hook_pre(agent=agent, user=person)
    return session, assembly, (time.perf_counter() - started) * 1000


def _gets_of(s3, keys: list[str], since: int) -> list:
    return [
        (method, path)
        for method, path in s3.proxy.requests[since:]
        if method in ("GET", "HEAD") and any(key in path for key in keys)
    ]


def test_oversized_direct_writes_are_refused_and_the_pre_hook_stays_as_fast(
    s3, project, agent, person, admin, runner, client
):
    before = [_pre(agent, person)[2] for _ in range(4)]
    a = MemoryFile.objects.get(path="incidents/a.md")
    huge_key = layout.workspace_file_key(project.prefix, "huge-20mb.md")
    # 20 MiB in a new workspace file, a bare PUT with the runner's keys (no proof: external);
    # 300 KiB over an existing file through runnerkit, signed (its proof names the agent).
    runner["direct"].client.put_object(Bucket=s3.bucket, Key=huge_key, Body=b"x" * (20 * MIB))
    writing_session, _assembly, _ms = _pre(agent, person)
    signed = runner["direct"].write(
        s3.bucket,
        a.key,
        b"y" * (300 * 1024),
        etag=a.head_etag,
        agent=str(agent.pk),
        session=str(writing_session.pk),
        token=runner["token"],
    )
    assert signed.status == "written"

    mark = len(s3.proxy.requests)
    session, assembly, first = _pre(agent, person)
    after = [_pre(agent, person)[2] for _ in range(4)]
    print(
        f"\npre hook ms before the writes {[round(t, 1) for t in before]}; "
        f"first after (finds and records them) {first:.1f}; "
        f"then {[round(t, 1) for t in after]}"
    )

    # The previous revision is injected, nothing of the refused objects.
    assert "# Incident A" in assembly.prompt and "yyyy" not in assembly.prompt
    assert "huge-20mb" not in assembly.prompt and "xxxx" not in assembly.prompt
    assert prehook.receipt_revisions(session)["workspace/incidents/a.md"] == 1
    a.refresh_from_db()
    assert a.head.number == 1 and a.refused_etag
    refused = {r.key: r for r in RefusedWrite.objects.filter(project=project)}
    assert (refused[huge_key].reason, refused[huge_key].size) == ("too_large", 20 * MIB)
    assert refused[huge_key].writer_label == "external"
    assert (refused[a.key].reason, refused[a.key].size) == ("too_large", 300 * 1024)
    assert refused[a.key].writer_label == f"external (agent:{agent.slug})"
    assert refused[a.key].writer_session == str(writing_session.pk)
    assert AuditEvent.objects.filter(action="file.external_refused").count() == 2
    # Found once: later hooks list the prefix and read neither object again.
    assert _gets_of(s3, [huge_key, a.key], mark)  # the first one did read (a bounded GET)
    mark_after = len(s3.proxy.requests)
    _pre(agent, person)
    assert _gets_of(s3, [huge_key, a.key], mark_after) == []
    assert max(after) < max(10 * max(before), 500)  # a sanity bound, not a benchmark

    # People see the refused writes (admins and reviewers), never their bytes.
    client.force_login(admin)
    workspace = client.get(reverse("projects:workspace", args=[project.slug]))
    text = workspace.content.decode()
    assert "Writes the console refused" in text and "huge-20mb.md" in text
    assert "20,971,520 bytes, over the limit of 262,144 bytes" in text
    assert f"external (agent:{agent.slug})" in text
    page = client.get(reverse("projects:file_detail", args=[project.slug, a.pk]))
    assert page.status_code == 200 and len(page.content) < settings.MGC_MAX_FILE_BYTES
    assert "<h1>Incident A</h1>" in page.content.decode() and "yyyy" not in page.content.decode()
    assert "Writes the console refused" in page.content.decode()

    # Deleting puts the recorded head back at the key, and removes the new object.
    for item in RefusedWrite.objects.filter(project=project):
        response = client.post(reverse("projects:refused_delete", args=[project.slug, item.pk]))
        assert response.status_code == 302
    assert s3.get(a.key) == b"# Incident A\n"
    assert huge_key not in s3.keys(project.prefix)
    assert set(RefusedWrite.objects.values_list("state", flat=True)) == {"deleted"}
    assert AuditEvent.objects.filter(action="file.refused_delete").count() == 2
    session, assembly, _ms = _pre(agent, person)
    a.refresh_from_db()
    assert a.head.number == 1 and not a.refused_etag  # the head's own bytes: no revision
    assert reconcile.reconcile(project=project) == []


BAD_NAMES = [
    ".hidden.md",
    "notes/.x.md",
    "AGENTS.md",
    "notes/USER.md",
    "ＡＧＥＮＴＳ.md",
    "x\u2215..\u2215y.md",
    "a<b>.md",
    "tab\there.md",
]


def test_look_alike_and_dot_names_written_directly_are_refused_on_adoption(
    s3, project, agent, person, admin, runner, client
):
    # In the workspace, where the runner's credentials may write: the next pre hook finds them.
    keys = [layout.workspace_prefix(project.prefix) + name for name in BAD_NAMES]
    for key in keys:
        s3.put(key, b"# Pretending\n")
    session, assembly, _ms = _pre(agent, person)
    assert "Pretending" not in assembly.prompt
    found = {r.key: r for r in RefusedWrite.objects.filter(project=project)}
    assert set(found) == set(keys)
    assert {r.reason for r in found.values()} == {"name"}
    assert not MemoryFile.objects.filter(key__in=keys).exists()
    # Recorded once: the next hook reads none of them again, reconcile finds nothing new.
    mark = len(s3.proxy.requests)
    _pre(agent, person)
    assert _gets_of(s3, keys, mark) == []
    assert [r for r in reconcile.reconcile(project=project) if r.key in keys] == []
    # In the agent's folder, which no runner credential may write: written with other keys,
    # out of band, and found by reconcile (the pre hook does not list it).
    others = [
        f"{layout.agent_prefix(project.prefix, agent.pk)}\uff33\uff2f\uff35\uff2c.md",
        f"{layout.agent_prefix(project.prefix, agent.pk)}SOUL.md.bak",
    ]
    for key in others:
        s3.put(key, b"# Pretending\n")
    assert "Pretending" not in _pre(agent, person)[1].prompt
    assert {r.key for r in reconcile.reconcile(project=project)} == set(others)
    keys += others
    assert RefusedWrite.objects.count() == len(keys)
    found = {r.key: r for r in RefusedWrite.objects.filter(project=project)}

    client.force_login(admin)
    text = client.get(reverse("projects:workspace", args=[project.slug])).content.decode()
    assert "Names may not start with a dot." in text
    assert "is the name of an agent&#x27;s or a person&#x27;s own memory file" in text
    assert "an agent&#x27;s folder holds only SOUL.md, AGENTS.md, TOOLS.md" in text
    hidden = found[keys[0]]
    client.post(reverse("projects:refused_delete", args=[project.slug, hidden.pk]))
    assert keys[0] not in s3.keys(project.prefix)
    assert RefusedWrite.objects.get(pk=hidden.pk).state == "deleted"


def test_reconcile_refuses_what_the_pre_hook_would(s3, project, workspace_file):
    """The same rules whoever finds the object first: reconcile records refused writes, the
    head stays, and isolation reports them as warnings, not as adopted files."""
    s3.put(workspace_file.key, b"\x00binary\x00")
    s3.put(layout.workspace_prefix(project.prefix) + ".env.md", b"SECRET=1\n")
    repairs = {r.key: r.kind for r in reconcile.reconcile(project=project)}
    assert repairs == {layout.workspace_prefix(project.prefix) + ".env.md": "refused"}
    file = MemoryFile.objects.get(pk=workspace_file.pk)
    assert file.head == workspace_file.head and not Revision.objects.filter(number=2).exists()
    assert RefusedWrite.objects.get(file=file).reason == "binary"
    assert reconcile.reconcile(project=project) == []  # twice: nothing more


def test_a_save_replaces_a_refused_object_and_says_so(s3, project, workspace_file, admin):
    s3.put(workspace_file.key, b"z" * (settings.MGC_MAX_FILE_BYTES + 1))
    adoption.adopt(workspace_file)
    file = MemoryFile.objects.get(pk=workspace_file.pk)
    revision = store.file_save(
        file=file, content="# Fresh\n", actor=Actor.person(admin), base_revision=file.head.number
    )
    assert revision.number == 2 and s3.get(file.key) == b"# Fresh\n"
    file.refresh_from_db()
    assert not file.refused_etag
    assert RefusedWrite.objects.get(file=file).state == "replaced"


def test_an_export_leaves_a_refused_object_out(s3, project, workspace_file, admin):
    import io
    import json
    import zipfile

    from projects.governance import exports

    s3.put(workspace_file.key, b"z" * (settings.MGC_MAX_FILE_BYTES + 1))
    out = io.BytesIO()
    exports.project_export(by=admin, project=project, out=out)
    archive = zipfile.ZipFile(out)
    assert not [n for n in archive.namelist() if n.startswith("memory/workspace/")]
    entry = json.loads(archive.read("history.json"))["entries"][0]
    assert entry["exported"] is False and re.match(r"workspace/", entry["path"])


@pytest.mark.db_independent
def test_under_the_default_policy_runners_write_notes_directly_and_only_append_to_logs(
    s3, project, agent, person, admin, runner, client
):
    """The default policy: workspace/**.md may be replaced in place, its logs only appended
    to. The runner's credentials get the workspace (SeaweedFS takes no Deny for the logs), so
    the console judges what lands under workspace/logs/ when it finds it."""
    log = store.file_create(
        project=project,
        scope="workspace",
        path="logs/tools.md",
        content="- started\n",
        actor=Actor.system("t"),
    ).file
    put = lambda key, body: runner["direct"].client.put_object(Bucket=s3.bucket, Key=key, Body=body)  # noqa: E731
    note_key = layout.workspace_file_key(project.prefix, "notes/x.md")
    put(note_key, b"# Direct note\n")
    put(log.key, b"- nothing happened\n")  # a rewrite of the log, not an append
    _session, assembly, _ms = _pre(agent, person)
    note = MemoryFile.objects.get(key=note_key)
    assert note.head.number == 1 and note.head.author_label.startswith("external")
    assert "# Direct note" in assembly.prompt
    log.refresh_from_db()
    assert log.head.number == 1 and log.refused_etag
    refused = RefusedWrite.objects.get(file=log)
    assert refused.reason == "not_direct"
    assert refused.detail == {"rule": "workspace/logs/**.md", "agent": agent.slug, "appends": True}
    assert "nothing happened" not in _pre(agent, person)[1].prompt
    client.force_login(admin)
    text = client.get(reverse("projects:workspace", args=[project.slug])).content.decode()
    assert "Not an append: under the hook policy rule workspace/logs/**.md (agent analyst)" in text

    put(log.key, b"- started\n- step 2\n")  # an append to the head: adopted
    _pre(agent, person)
    log.refresh_from_db()
    assert log.head.number == 2 and not log.refused_etag
    assert s3.get(log.key) == b"- started\n- step 2\n"
    assert RefusedWrite.objects.get(pk=refused.pk).state == "replaced"
    assert AuditEvent.objects.filter(action="file.external_change", details__mode="append").count() == 1
    settings_page = client.get(reverse("projects:agent_settings", args=[project.slug, agent.slug]))
    assert "except what the stricter workspace/logs/**.md governs:" in settings_page.content.decode()
