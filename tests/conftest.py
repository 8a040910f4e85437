"""Shared fixtures: a real S3-speaking server on 127.0.0.1 (moto's, over HTTP) behind a
fault-injecting proxy, and small factories for records."""

from __future__ import annotations

import copy
import itertools
import json
import logging
import urllib.request

import boto3
import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import translation
from moto.server import ThreadedMotoServer

from projects import store
from projects.audit import Actor
from projects.models import Agent, Membership, MemoryFile, Project
from tests.s3proxy import FaultProxy

BUCKET = "test-memory"
logging.getLogger("werkzeug").setLevel(logging.WARNING)


def pytest_configure(config):
    # Password hashing is deliberately slow (PBKDF2, a million rounds); tests log in with
    # throwaway passwords, so a fast hasher keeps each user fixture from costing ~0.4 s.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


class S3:
    """The test's view of the bucket: a raw client straight to the server (an agent's sandbox
    writing directly), the proxy for faults, and a reset between tests."""

    def __init__(self, moto_url: str, proxy: FaultProxy):
        self.moto_url = moto_url
        self.proxy = proxy
        self.bucket = BUCKET
        self.client = boto3.client(
            "s3", endpoint_url=moto_url, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
        )

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.moto_url}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).read()
        self.proxy.clear()
        self.client.create_bucket(Bucket=self.bucket)

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                     Prefix=prefix)
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


@pytest.fixture(scope="session")
def s3_server():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    proxy = FaultProxy(host, port).start()
    options = copy.deepcopy(settings.STORAGES)
    options["memory"]["OPTIONS"].update(
        endpoint_url=proxy.url, bucket_name=BUCKET, access_key="test", secret_key="test",
        region_name="us-east-1",
    )
    # One attempt and short timeouts: a fault test sees the failure, not a retry hiding it.
    overrides = override_settings(STORAGES=options, MGC_S3_MAX_ATTEMPTS=1,
                                  MGC_S3_CONNECT_TIMEOUT=2, MGC_S3_READ_TIMEOUT=3)
    overrides.enable()
    yield S3(f"http://{host}:{port}", proxy)
    overrides.disable()
    proxy.stop()
    server.stop()


@pytest.fixture
def s3(s3_server) -> S3:
    s3_server.reset()
    yield s3_server
    s3_server.proxy.clear()


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
    revision = store.file_create(project=project, scope="workspace", path="notes/today.md",
                                 content="first\n", actor=actor, message="start")
    return MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id)


def pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
