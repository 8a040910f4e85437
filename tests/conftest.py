"""Shared fixtures: a real S3 server on 127.0.0.1 (SeaweedFS, over HTTP, signed requests)
behind a fault-injecting proxy, and small factories for records."""

from __future__ import annotations

import copy
import itertools
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pytest
from django.conf import settings
from django.core.files.storage import storages
from django.db import connection
from django.test import override_settings
from django.utils import translation

from devtools.seaweed import CONSOLE_IDENTITY, SeaweedMini
from projects.audit import Actor
from projects.memory import store
from projects.models import Agent, Membership, MemoryFile, Project
from tests.s3proxy import FaultProxy

BUCKET = "test-memory"
# Subjects' answers and acts are kept under COMPLIANCE retention, which nobody can delete: they
# go to a bucket of their own that no test empties (the server's folder goes after the session).
RECORDS_BUCKET = "test-records"
ACCESS_KEY, SECRET_KEY = "test-console-key", "test-console-secret"


# Which run a test belongs to is said by its markers (pyproject.toml declares them):
# - `db_independent`: its outcome cannot depend on the database, so `make test` runs it in its
#   SQLite run only, and the PostgreSQL run spends its time on what PostgreSQL changes (locks,
#   full-text search, concurrency, the scale-out test);
# - `demo`: runs make demo's script, which brings its own database; the demo's restart test is
#   slow, so when both runs go side by side (scripts/test.sh sets MGC_TEST_SPLIT=1) these run in
#   a third lane beside them, and neither run has them. Alone, either run has them.
# The rest, when both runs go side by side, is shared out by module rather than run twice: every
# test runs against one database, and the tests of the database's own behaviour against both.
# Those are the modules that speak of PostgreSQL or the connection's vendor (locks, triggers,
# concurrency, full-text search, a server process of their own) and the modules of
# BOTH_DATABASES below (the save path); a module goes to a run by a
# stable hash of its path, so the split does not change from one run to the next.
BOTH_DATABASES = {"test_store.py"}
_MODULE_RUNS: dict[str, str] = {}


def _module_run(item) -> str:
    """'both', 'sqlite' or 'postgresql': where a database-dependent test runs in a split."""
    path = item.path
    key = str(path)
    if key not in _MODULE_RUNS:
        source = path.read_text(errors="replace").lower() if path.suffix == ".py" else ""
        if path.name in BOTH_DATABASES or "postgresql" in source or "connection.vendor" in source:
            _MODULE_RUNS[key] = "both"
        else:
            relative = path.relative_to(Path(__file__).resolve().parent).as_posix()
            # Two in five to the PostgreSQL run: it also has the slow tests of both kinds.
            _MODULE_RUNS[key] = "postgresql" if zlib.crc32(relative.encode()) % 5 < 2 else "sqlite"
    return _MODULE_RUNS[key]


def pytest_collection_modifyitems(config, items):
    split = os.environ.get("MGC_TEST_SPLIT") == "1"
    postgresql = connection.vendor == "postgresql"
    if not (split or postgresql):
        return
    demo = pytest.mark.skip(reason="make demo's tests run in their own lane (scripts/test.sh)")
    sqlite_only = pytest.mark.skip(reason="independent of the database: run in the SQLite run")
    elsewhere = pytest.mark.skip(reason="shared out: this module runs against the other database")
    for item in items:
        independent = item.get_closest_marker("db_independent")
        if split and item.get_closest_marker("demo"):
            item.add_marker(demo)
        elif postgresql and independent:
            item.add_marker(sqlite_only)
        elif split and not independent and _module_run(item) not in ("both", connection.vendor):
            item.add_marker(elsewhere)


def pytest_configure(config):
    # Password hashing is deliberately slow (PBKDF2, a million rounds); tests log in with
    # throwaway passwords, so a fast hasher keeps each user fixture from costing ~0.4 s.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Tests sign in many times a minute from 127.0.0.1; the pause of an address past its rate
    # of sign-ins has a test of its own (tests/views/test_signin.py).
    settings.MGC_LOGIN_ADDRESS_RATE = "100000/m"


class S3:
    """The test's view of the bucket: a raw client straight to the server (an agent's sandbox
    writing directly), the proxy for faults, and a clean bucket for every test.

    Emptying a bucket on SeaweedFS takes ~0.1 s (a listing, then a batch delete), longer than
    many tests. So tests take turns over a few buckets: each test gets one emptied while the
    tests before it ran, and hands its own to a background thread when it ends. A bucket that
    a test turned versioning on for is deleted and made anew; other buckets a test made, and
    IAM users it made, are removed before the next test starts."""

    POOL = (BUCKET, f"{BUCKET}-b", f"{BUCKET}-c")

    def __init__(self, server: SeaweedMini, proxy: FaultProxy):
        self.server = server
        self.direct_url = server.endpoint
        self.proxy = proxy
        self.bucket = BUCKET
        self.client = boto3.client(
            "s3",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )
        self.iam = boto3.client(
            "iam",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )
        for name in self.POOL:
            self.client.create_bucket(Bucket=name)
        self._cleaner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="s3-reset")
        self._ready = {name: None for name in self.POOL}  # bucket -> its pending clean-up
        self._turn = itertools.cycle(self.POOL)
        self._touched: set[str] = set()
        self.client.meta.events.register("before-call.s3", self._note_direct_call)
        self.iam.meta.events.register("before-call.iam", lambda **_: self._touched.add("users"))

    def _note_direct_call(self, event_name: str, **_):
        operation = event_name.rsplit(".", 1)[-1]
        if operation in ("CreateBucket", "DeleteBucket"):
            self._touched.add("buckets")
        if operation in ("PutBucketVersioning", "PutObjectLockConfiguration"):
            self._touched.add("versioning")

    def begin(self) -> None:
        """Take the next bucket in turn, once its clean-up has finished."""
        self.bucket = next(self._turn)
        pending = self._ready[self.bucket]
        if pending is not None:
            pending.result()
        self._point_at(self.bucket)
        self.proxy.clear()
        self._touched = set()

    @staticmethod
    def _point_at(bucket: str) -> None:
        # Changed in place, not with override_settings: that would make Django build a new
        # storage (and boto3 client, ~50 ms) for every test.
        settings.STORAGES["memory"]["OPTIONS"]["bucket_name"] = bucket
        memory = storages["memory"]
        memory.bucket_name, memory._bucket = bucket, None

    def end(self) -> None:
        self._point_at(BUCKET)
        self.proxy.heal()
        touched = set(self._touched)
        for method, path in list(self.proxy.requests):
            if method == "POST" and path.split("?")[0] == "/":
                touched.add("users")  # the IAM API shares the S3 port
            elif method == "PUT" and path.strip("/").count("/") == 0 and "?" not in path:
                touched.add("buckets")
        if "buckets" in touched:
            for bucket in self.client.list_buckets().get("Buckets", []):
                if bucket["Name"] not in (*self.POOL, RECORDS_BUCKET):
                    self._empty(bucket["Name"])
                    self.client.delete_bucket(Bucket=bucket["Name"])
        if "users" in touched:
            for user in self.iam.list_users().get("Users", []):
                if user["UserName"] != CONSOLE_IDENTITY:
                    self.drop_user(user["UserName"])
        self._ready[self.bucket] = self._cleaner.submit(self._renew, self.bucket, "versioning" in touched)

    def _renew(self, bucket: str, recreate: bool) -> None:
        self._empty(bucket)
        if recreate:  # versioning can be suspended, never turned off
            self.client.delete_bucket(Bucket=bucket)
            self.client.create_bucket(Bucket=bucket)

    def _empty(self, bucket: str) -> None:
        pages = self.client.get_paginator("list_object_versions").paginate(Bucket=bucket)
        doomed = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for page in pages
            for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
        ]
        for start in range(0, len(doomed), 1000):
            answer = self.client.delete_objects(
                Bucket=bucket, Delete={"Objects": doomed[start : start + 1000]}
            )
            for refused in answer.get("Errors", []):  # a legal hold a test left standing
                self.client.put_object_legal_hold(
                    Bucket=bucket,
                    Key=refused["Key"],
                    VersionId=refused["VersionId"],
                    LegalHold={"Status": "OFF"},
                )
                self.client.delete_object(Bucket=bucket, Key=refused["Key"], VersionId=refused["VersionId"])
        # A key with a control character cannot travel in XML 1.0: ListObjectVersions names it
        # with U+FFFD instead, so the batch above missed it. ListObjectsV2 sends keys URL-encoded
        # (boto3 decodes them): delete what is left one by one, or it outlives the test.
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                self.client.delete_object(Bucket=bucket, Key=item["Key"])

    def drop_user(self, name: str) -> None:
        for key in self.iam.list_access_keys(UserName=name).get("AccessKeyMetadata", []):
            self.iam.delete_access_key(UserName=name, AccessKeyId=key["AccessKeyId"])
        for policy in self.iam.list_user_policies(UserName=name).get("PolicyNames", []):
            self.iam.delete_user_policy(UserName=name, PolicyName=policy)
        self.iam.delete_user(UserName=name)

    def close(self) -> None:
        self._cleaner.shutdown(wait=True)

    def lock(self) -> None:
        """Versioning and S3 Object Lock on the test's bucket, as `ensure_bucket` sets the
        console's (the bucket is made anew after the test)."""
        self.client.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"})
        self.client.put_object_lock_configuration(
            Bucket=self.bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}
        )

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)


@pytest.fixture(autouse=True)
def default_language() -> None:
    """Each test starts in the console's default language: a request in Russian leaves Russian
    active in its thread (LocaleMiddleware activates per request and does not reset)."""
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def prompts_stored_before_teardown():
    """A pre hook's new prompt is PUT by a thread after its answer (memory/receipts.py, on
    PostgreSQL outside a transaction): it is done before the test's database is flushed, so
    no test's teardown races the last test's write."""
    yield
    from projects.memory import receipts

    receipts.settle()


@pytest.fixture(autouse=True)
def no_cached_subscriptions():
    """The outbox's cached list of webhook subscriptions outlives a test's rolled-back rows."""
    from projects import outbox

    outbox.forget_targets()
    yield
    outbox.forget_targets()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    # `<bucket>.localhost` too: tests/test_storage_contract.py reads with virtual-hosted addressing.
    server = SeaweedMini(
        tmp_path_factory.mktemp("seaweedfs"), access_key=ACCESS_KEY, secret_key=SECRET_KEY, domain="localhost"
    ).start()
    proxy = FaultProxy("127.0.0.1", server.s3_port).start()
    options = copy.deepcopy(settings.STORAGES)
    options["memory"]["OPTIONS"].update(
        endpoint_url=proxy.url,
        bucket_name=BUCKET,
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        region_name="us-east-1",
    )
    # One attempt and short timeouts: a fault test sees the failure, not a retry hiding it.
    overrides = override_settings(
        STORAGES=options,
        MGC_S3_MAX_ATTEMPTS=1,
        MGC_S3_CONNECT_TIMEOUT=2,
        MGC_S3_READ_TIMEOUT=3,
        MGC_RECORDS_BUCKET=RECORDS_BUCKET,
    )
    overrides.enable()
    helper = S3(server, proxy)
    helper.client.create_bucket(Bucket=RECORDS_BUCKET, ObjectLockEnabledForBucket=True)
    yield helper
    helper.close()
    overrides.disable()
    proxy.stop()
    server.stop()


@pytest.fixture
def s3(s3_server) -> S3:
    s3_server.begin()
    yield s3_server
    s3_server.end()


_seq = itertools.count(1)


@pytest.fixture
def make_user(django_user_model):
    def make(username: str | None = None, **extra):
        name = username or f"user{next(_seq)}"
        return django_user_model.objects.create_user(username=name, password="pw-" + name, **extra)

    return make


@pytest.fixture
def make_project():
    def make(**fields) -> Project:
        n = next(_seq)
        fields.setdefault("slug", f"project-{n}")
        fields.setdefault("name", f"Project {n}")
        return Project.objects.create(**fields)

    return make


@pytest.fixture
def project(make_project) -> Project:
    return make_project(slug="incidents", name="Incident analysis")


@pytest.fixture
def agent(project) -> Agent:
    return Agent.objects.create(project=project, slug="analyst", name="Incident analyst")


@pytest.fixture
def person(make_user, project):
    user = make_user("maria")
    Membership.objects.create(user=user, project=project, role=Membership.Role.EMPLOYEE)
    return user


@pytest.fixture
def admin(make_user, project):
    """Olga, an admin of the project."""
    user = make_user("olga")
    Membership.objects.create(user=user, project=project, role="admin")
    return user


@pytest.fixture
def reviewer(make_user, project):
    """Rita, compliance staff of the project."""
    user = make_user("rita")
    Membership.objects.create(user=user, project=project, role="compliance")
    return user


@pytest.fixture
def actor(person) -> Actor:
    return Actor.person(person)


@pytest.fixture
def workspace_file(s3, project, actor) -> MemoryFile:
    """A workspace file with one revision: 'first\\n'."""
    revision = store.file_create(
        project=project,
        scope="workspace",
        path="notes/today.md",
        content="first\n",
        actor=actor,
        message="start",
    )
    return MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id)


class DatabaseRefusal:
    """A database trigger refusing inserts into `table` (optionally only rows matching a SQL
    condition on NEW): the database failing in the middle of a change."""

    def __init__(self, table: str, when: str = ""):
        self.table, self.when, self.name = table, when, f"mgc_refuse_{table}"

    def start(self) -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"""
                    CREATE OR REPLACE FUNCTION {self.name}() RETURNS trigger AS $$
                    BEGIN RAISE EXCEPTION 'injected database failure'; END; $$
                    LANGUAGE plpgsql""")
                when = f"WHEN ({self.when}) " if self.when else ""
                cursor.execute(
                    f"CREATE TRIGGER {self.name} BEFORE INSERT ON {self.table} "
                    f"FOR EACH ROW {when}EXECUTE FUNCTION {self.name}()"
                )
            else:
                when = f"WHEN {self.when} " if self.when else ""
                cursor.execute(
                    f"CREATE TRIGGER {self.name} BEFORE INSERT ON {self.table} "
                    f"{when}BEGIN SELECT RAISE(ABORT, 'injected database failure'); "
                    f"END"
                )

    def stop(self) -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {self.name} ON {self.table}")
                cursor.execute(f"DROP FUNCTION IF EXISTS {self.name}()")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {self.name}")


@pytest.fixture
def revision_inserts_fail():
    """New revision rows are refused, after S3 has the new head (as a worker killed before
    its commit leaves it)."""
    refusal = DatabaseRefusal("projects_revision")
    refusal.start()
    yield refusal
    refusal.stop()


def reload_file(file: MemoryFile) -> MemoryFile:
    """The file's record as the database has it now, with its head."""
    return MemoryFile.objects.select_related("head", "project").get(pk=file.pk)


@pytest.fixture
def token(agent, make_user) -> str:
    """A runner's bearer token for the agent (made by someone outside the project)."""
    from projects.runners import bearer

    return bearer.token_create(agent=agent, name="runner", created_by=make_user("tokenadmin"))[1]


def pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# --- Single sign-on: a real OpenID Connect provider in its own process -----------------------


@pytest.fixture(scope="session")
def identity_provider(tmp_path_factory):
    """devtools/oidc_provider (django-oauth-toolkit) on a free port, for the whole session;
    the console's test client calls back at http://testserver."""
    from devtools.oidc_provider.server import OidcProvider
    from devtools.seaweed import free_ports

    provider = OidcProvider(
        tmp_path_factory.mktemp("idp"),
        free_ports(1)[0],
        redirect_uris=["http://testserver/sso/complete/oidc/"],
        post_logout_uris=["http://testserver/accounts/login/"],
    ).start()
    yield provider
    provider.stop()


@pytest.fixture
def sso(identity_provider, settings):
    """Single sign-on on, pointed at the test provider, which behaves (switches off)."""
    settings.MGC_OIDC_ENABLED = True
    settings.MGC_OIDC_ISSUER = settings.SOCIAL_AUTH_OIDC_OIDC_ENDPOINT = identity_provider.issuer
    settings.MGC_OIDC_CLIENT_ID = settings.SOCIAL_AUTH_OIDC_KEY = identity_provider.client_id
    settings.MGC_OIDC_CLIENT_SECRET = settings.SOCIAL_AUTH_OIDC_SECRET = identity_provider.client_secret
    settings.MGC_OIDC_PROVIDER_NAME = "Test IdP"
    csp = copy.deepcopy(settings.SECURE_CSP)
    csp["form-action"].append(identity_provider.base)
    settings.SECURE_CSP = csp
    identity_provider.misbehave()
    return identity_provider
