"""The pre hook's lean S3 reads answer as boto3 does.

`MemoryStorage.etags` (the LIST of a prefix) and `MemoryStorage.body` (a GET) skip botocore's
client: botocore's SigV4 signer, urllib3 and ElementTree, with a retry loop of their own
(projects/memory/storage.py says why). Here they and a plain boto3 client ask the same
SeaweedFS the same questions, with path-style and with virtual-hosted addressing, and must get
the same answers: an object's bytes and ETag, a listing over more than one page, a missing
key, keys with spaces, reserved characters and non-ASCII letters.

Both go through the tests' proxy, which records each request's path: a path-style request
names the bucket first, a virtual-hosted one names it in the host instead. For that the
tests' SeaweedFS serves buckets as `<bucket>.localhost` (weed's -s3.domainName), and those
names are resolved to 127.0.0.1 here, as RFC 6761 has every name under `.localhost` resolve
(glibc's resolver knows only `localhost` itself).
"""

import random
import socket
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from django.conf import settings

from projects.memory.errors import StorageUnavailable
from projects.memory.storage import MemoryStorage
from tests.conftest import ACCESS_KEY, SECRET_KEY

# No database: the SQLite run has them.
pytestmark = pytest.mark.db_independent

STYLES = ("path", "virtual")
PREFIX = "contract/workspace/"
KEYS = [
    "plain.md",
    "a b+c%20d.md",  # a space, a plus and what looks like an escape
    "what? #1 & more=yes;(x)*'!.md",  # characters a URL reserves
    "~tilde/.hidden.md",
    unicodedata.normalize("NFC", "café/ünïcode.md"),
    unicodedata.normalize("NFD", "café/ünïcode.md"),  # another key, the same letters
    "日本語/メモ.md",
    "emoji 🙂.md",
    "x\x01y.md",  # a control character: listed URL-encoded (XML 1.0 cannot carry it)
]


@pytest.fixture
def localhost_names(monkeypatch):
    """`localhost` and every `<name>.localhost` on 127.0.0.1, for both clients (botocore and
    the lean reads both connect through urllib3, which asks socket.getaddrinfo)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and (host == "localhost" or host.endswith(".localhost")):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _endpoint(s3, style: str) -> str:
    # botocore keeps path style for an IP address, so virtual hosts need a name.
    port = urlsplit(s3.proxy.url).port
    return f"http://127.0.0.1:{port}" if style == "path" else f"http://localhost:{port}"


def _lean(s3, style: str) -> MemoryStorage:
    options = dict(
        settings.STORAGES["memory"]["OPTIONS"],
        bucket_name=s3.bucket,
        endpoint_url=_endpoint(s3, style),
        addressing_style=style,
    )
    return MemoryStorage(**options)


def _boto3(s3, style: str):
    return boto3.client(
        "s3",
        endpoint_url=_endpoint(s3, style),
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(s3={"addressing_style": style}, retries={"total_max_attempts": 1}),
    )


def _listing(client, bucket: str, prefix: str) -> tuple[dict[str, str], int]:
    """boto3's Key -> ETag under a prefix, and how many pages it took."""
    found, pages = {}, 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        pages += 1
        found.update({item["Key"]: item["ETag"] for item in page.get("Contents", [])})
    return found, pages


def _assert_addressed(s3, style: str) -> None:
    """Every request the proxy saw was addressed in `style`."""
    paths = [path for _method, path in s3.proxy.requests]
    assert paths
    named = [path.startswith((f"/{s3.bucket}/", f"/{s3.bucket}?")) for path in paths]
    assert all(named) if style == "path" else not any(named), paths


@pytest.mark.parametrize("style", STYLES)
def test_objects_read_the_same_bytes_and_etags(s3, localhost_names, style):
    rng = random.Random(31)
    stored = {PREFIX + key: key.encode("utf-8") * 3 for key in KEYS}
    stored[PREFIX + "binary.bin"] = rng.randbytes(300_000)  # larger than one read of the socket
    stored[PREFIX + "empty.md"] = b""
    for key, data in stored.items():
        s3.put(key, data)
    s3.put("contract/workspaces.md", b"beside the prefix, not under it")
    lean, client = _lean(s3, style), _boto3(s3, style)
    s3.proxy.clear()

    listed = lean.etags(PREFIX)
    expected, _pages = _listing(client, s3.bucket, PREFIX)
    assert listed == expected
    assert sorted(listed) == sorted(stored)
    for key, data in stored.items():
        answer = client.get_object(Bucket=s3.bucket, Key=key)
        assert lean.body(key) == answer["Body"].read() == data, key
        assert listed[key] == answer["ETag"], key
    _assert_addressed(s3, style)


@pytest.mark.parametrize("style", STYLES)
def test_a_missing_key_and_an_empty_prefix(s3, localhost_names, style):
    s3.put(PREFIX + "there.md", b"here")
    lean, client = _lean(s3, style), _boto3(s3, style)
    s3.proxy.clear()

    for missing in (PREFIX + "missing.md", PREFIX + "caf\u00e9 missing.md"):
        assert lean.body(missing) is None
        with pytest.raises(ClientError) as refused:
            client.get_object(Bucket=s3.bucket, Key=missing)
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        assert refused.value.response["Error"]["Code"] == "NoSuchKey"
    assert lean.etags("contract/nothing/") == {} == _listing(client, s3.bucket, "contract/nothing/")[0]
    _assert_addressed(s3, style)


@pytest.mark.parametrize("style", STYLES)
def test_a_bucket_that_is_not_there_is_refused_by_both(s3, localhost_names, style):
    lean, client = _lean(s3, style), _boto3(s3, style)
    lean.bucket_name = "contract-no-such-bucket"
    with pytest.raises(StorageUnavailable):
        lean.etags(PREFIX)
    with pytest.raises(ClientError) as refused:
        client.list_objects_v2(Bucket="contract-no-such-bucket", Prefix=PREFIX)
    assert refused.value.response["Error"]["Code"] == "NoSuchBucket"


def test_a_listing_of_several_pages_is_boto3s_in_both_styles(s3, localhost_names):
    """S3 answers a LIST 1000 keys at a time; the lean LIST follows the continuation tokens."""
    keys = [f"{PREFIX}many/{n:05d} {KEYS[n % len(KEYS)]}" for n in range(1001)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda key: s3.put(key, key.encode("utf-8")), keys))
    for style in STYLES:
        lean, client = _lean(s3, style), _boto3(s3, style)
        s3.proxy.clear()
        listed = lean.etags(PREFIX)
        lean_pages = sum(1 for _method, path in s3.proxy.requests if "list-type=2" in path)
        expected, pages = _listing(client, s3.bucket, PREFIX)
        assert listed == expected, style
        assert sorted(listed) == sorted(keys)
        assert lean_pages == pages == 2, style
        _assert_addressed(s3, style)


def test_virtual_addressing_at_an_ip_address_lists_what_boto3_lists(s3):
    """MGC_S3_ADDRESSING_STYLE=virtual with MGC_S3_ENDPOINT_URL=http://10.0.0.5:9000, say:
    boto3 sends path-style requests there, as no host name `<bucket>.10.0.0.5` exists."""
    s3.put(PREFIX + "a.md", b"a")
    endpoint = s3.proxy.url  # http://127.0.0.1:<port>
    options = dict(
        settings.STORAGES["memory"]["OPTIONS"],
        bucket_name=s3.bucket,
        endpoint_url=endpoint,
        addressing_style="virtual",
    )
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(s3={"addressing_style": "virtual"}),
    )
    expected, _pages = _listing(client, s3.bucket, PREFIX)
    assert expected == {PREFIX + "a.md": client.head_object(Bucket=s3.bucket, Key=PREFIX + "a.md")["ETag"]}
    assert MemoryStorage(**options).etags(PREFIX) == expected
