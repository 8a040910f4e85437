"""Races only PostgreSQL shows (row locks; SQLite serializes every write): two admins at once,
and an erasure while a pre hook for the same person runs. Each failed before its fix: a 500
from a unique index, two look-alike accounts or files, a deadlock, a kept prompt quoting an
erased profile."""

import json
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import Client

from projects.audit import Actor
from projects.memory import receipts, store
from projects.models import AgentSession, Membership, MemoryFile, PendingPrompt, Revision

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks are PostgreSQL's; the suite's second run uses it"
    ),
]


def _together(fns, timeout=60):
    barrier = threading.Barrier(len(fns))
    out = [None] * len(fns)

    def run(i, fn):
        try:
            barrier.wait(timeout=20)
            out[i] = fn()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            out[i] = exc
        finally:
            connections.close_all()

    ts = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=timeout)
    return out


def _admin_client(user):
    c = Client(raise_request_exception=False)
    c.force_login(user)
    return c


@pytest.mark.parametrize("names", [("anna", "anna"), ("Anna", "anna"), ("anna", "аnna")])
def test_two_accounts_at_once(s3, project, admin, make_user, names):
    other = make_user("olga2")
    Membership.objects.create(user=other, project=project, role="admin")
    url = f"/p/{project.slug}/members/new-account/"
    clients = [_admin_client(admin), _admin_client(other)]

    def make(c, name):
        return lambda: (
            c.post(
                url,
                {
                    "account-username": name,
                    "account-role": "employee",
                    "account-email": "",
                    "account-first_name": "",
                    "account-last_name": "",
                },
            ).status_code
        )

    for _ in range(3):
        got = _together([make(clients[0], names[0]), make(clients[1], names[1])])
        assert 500 not in got, got
        made = [
            u
            for u in get_user_model().objects.values_list("username", flat=True)
            if u.casefold() in {n.casefold() for n in names}
        ]
        assert len(made) <= 1, (got, made)
        get_user_model().objects.filter(username__in=names).delete()


@pytest.mark.parametrize("paths", [("notes/a.md", "notes/a.md"), ("notes/Plan.md", "notes/plan.md")])
def test_two_admins_create_same_workspace_file(s3, project, admin, make_user, paths):
    other = make_user("olga2")
    Membership.objects.create(user=other, project=project, role="admin")
    clients = [_admin_client(admin), _admin_client(other)]

    def create(c, path, text):
        return lambda: (
            c.post(
                f"/p/{project.slug}/workspace/new/edit/?path={path}",
                {"content": text, "message": "m", "base_revision": ""},
            ).status_code
        )

    got = _together([create(clients[0], paths[0], "by olga\n"), create(clients[1], paths[1], "by olga2\n")])
    assert 500 not in got, got
    files = list(MemoryFile.objects.filter(project=project, scope="workspace"))
    assert len(files) == 1, [f.path for f in files]
    revs = list(Revision.objects.filter(file=files[0]).order_by("number"))
    # one creation, the other conflict (not two silent revisions where the second overwrote)
    assert len(revs) == 1, [(r.number, r.author_label) for r in revs]


def test_two_admins_remove_each_other(s3, project, admin, make_user):
    other = make_user("olga2")
    m2 = Membership.objects.create(user=other, project=project, role="admin")
    m1 = Membership.objects.get(user=admin, project=project)
    c1, c2 = _admin_client(admin), _admin_client(other)
    got = _together(
        [
            lambda: c1.post(f"/p/{project.slug}/members/{m2.pk}/", {"remove": "1"}).status_code,
            lambda: c2.post(f"/p/{project.slug}/members/{m1.pk}/", {"remove": "1"}).status_code,
        ]
    )
    assert 500 not in got, got
    assert Membership.objects.filter(project=project, role="admin").count() >= 1


def test_two_admins_demote_each_other(s3, project, admin, make_user):
    other = make_user("olga2")
    m2 = Membership.objects.create(user=other, project=project, role="admin")
    m1 = Membership.objects.get(user=admin, project=project)
    c1, c2 = _admin_client(admin), _admin_client(other)
    url = f"/p/{project.slug}/members/"
    got = _together(
        [
            lambda: c1.post(f"{url}{m2.pk}/", {"role": "employee"}).status_code,
            lambda: c2.post(f"{url}{m1.pk}/", {"role": "employee"}).status_code,
        ]
    )
    assert 500 not in got, got
    assert Membership.objects.filter(project=project, role="admin").count() >= 1


def _api(client, path, body, token, key=None):
    h = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if key:
        h["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(f"/api/v1/{path}", json.dumps(body), content_type="application/json", **h)


# Where the pre hook is when the erasure runs: assembled, before its transaction; inside it
# (the session INSERTed, the prompt kept in a pending row); answered, before its prompt's PUT.
PAUSES = {
    "before its transaction": "prompt_known",
    "inside its transaction": "prompt_pending",
    "before the prompt's PUT": "prompt_store_pending",
}


@pytest.mark.parametrize("pause", list(PAUSES))
def test_erasure_while_pre_hook_runs(s3, project, agent, admin, person, token, monkeypatch, pause):
    store.file_create(
        project=project,
        scope="agent",
        agent=agent,
        path="SOUL.md",
        content="You help.\n",
        actor=Actor.system("t"),
    )
    store.file_create(
        project=project,
        scope="user",
        user=person,
        path="USER.md",
        content="SECRET-PROFILE maria is pregnant\n",
        actor=Actor.person(person),
    )
    kept = threading.Event()
    go = threading.Event()
    real = getattr(receipts, PAUSES[pause])

    def slow(*args, **kw):
        kept.set()
        go.wait(timeout=30)
        return real(*args, **kw)

    monkeypatch.setattr(receipts, PAUSES[pause], slow)
    result = {}

    def pre():
        try:
            result["r"] = _api(
                Client(raise_request_exception=False), "hooks/pre", {"user": person.username}, token
            )
        finally:
            connections.close_all()

    t = threading.Thread(target=pre)
    t.start()
    assert kept.wait(timeout=30)
    from projects.governance import erasure

    erasure.profile_erase(by=admin, user=person, reason="request", projects=[project])
    go.set()
    t.join(timeout=60)
    receipts.settle()
    if pause == "before the prompt's PUT":  # answered: the erasure saw the session
        assert result["r"].status_code == 200, result["r"].content[:200]
        assert AgentSession.objects.get(user=person).prompt_removed["how"] == "erased"
    else:  # the session's commit found the profile gone: nothing recorded, nothing stored
        assert result["r"].status_code == 409, result["r"].content[:200]
        assert result["r"].json()["error"]["code"] == "profile_erased"
        assert not AgentSession.objects.filter(user=person).exists()
    assert not PendingPrompt.objects.exists()
    leftovers = [k for k in s3.keys(project.prefix) if b"SECRET-PROFILE" in s3.get(k)]
    assert not leftovers, leftovers
    stored = AgentSession.objects.filter(user=person, prompt_stored=True)
    assert not stored.exists()
