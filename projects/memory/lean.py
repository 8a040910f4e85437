"""The pre hook's S3 reads without botocore's client: the key -> ETag listing of a prefix and
the GET of a snapshot, for MemoryStorage.etags and MemoryStorage.body.

botocore's client spends about 4 ms of CPU on a request that SeaweedFS answers in under 1 ms
on loopback, and requests made at once queue for the GIL. These send the same signed requests
themselves: botocore's own SigV4 signer, urllib3's kept-alive connections, ElementTree for the
XML; about 0.4 ms each. Retries follow the client's: MGC_S3_MAX_ATTEMPTS attempts, again after
a connection error, a 5xx or a 429. Without an endpoint URL and keys of its own (AWS with a
role, say) the storage goes through the client as everything else does (`usable`).
"""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET
from urllib.parse import quote, urlsplit

import urllib3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import unquote_str
from botocore.credentials import Credentials
from botocore.httpsession import get_cert_path
from botocore.utils import check_dns_name, is_valid_ipv4_endpoint_url, is_valid_ipv6_endpoint_url
from django.conf import settings

from projects import metrics
from projects.memory.errors import StorageUnavailable

logger = logging.getLogger(__name__)

_S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_pools: dict[object, urllib3.PoolManager] = {}


def usable(storage) -> bool:
    """The storage names its endpoint and keys, so its requests can be signed here."""
    return bool(storage.endpoint_url and storage.access_key and storage.secret_key)


def etags(storage, prefix: str) -> dict[str, str]:
    """Key -> ETag of every object under a prefix (ListObjectsV2, page after page)."""
    found: dict[str, str] = {}
    token = ""
    while True:
        params = {"list-type": "2", "prefix": prefix, "encoding-type": "url"}
        if token:
            params["continuation-token"] = token
        data = signed_get(storage, "", params)
        try:  # the configured store's answer, parsed as botocore parses it
            root = ET.fromstring(data or b"")  # noqa: S314 - expat, no entities
        except ET.ParseError as exc:
            raise _failed(exc, operation="ListObjectsV2") from exc
        for item in root.iter(f"{_S3_NS}Contents"):
            found[unquote_str(item.findtext(f"{_S3_NS}Key", ""))] = item.findtext(f"{_S3_NS}ETag", "")
        token = root.findtext(f"{_S3_NS}NextContinuationToken", "")
        if root.findtext(f"{_S3_NS}IsTruncated", "false") != "true" or not token:
            return found


def _virtual(storage) -> bool:
    """Whether the bucket goes in the host name, as botocore decides it: asked for, and
    possible (a bucket a host name can carry, an endpoint that is a name, not an IP address)."""
    url = storage.endpoint_url
    return (
        storage.addressing_style == "virtual"
        and check_dns_name(storage.bucket_name)
        and not is_valid_ipv4_endpoint_url(url)
        and not is_valid_ipv6_endpoint_url(url)
    )


def signed_get(storage, key: str, params: dict[str, str]) -> bytes | None:
    """One signed GET of `key` (the bucket itself when empty), retried as the client's
    requests are: the body, None for a 404, StorageUnavailable for anything else."""
    endpoint = urlsplit(storage.endpoint_url)
    path = quote(key, safe="/~")
    if _virtual(storage):
        url = f"{endpoint.scheme}://{storage.bucket_name}.{endpoint.netloc}/{path}"
    else:
        url = f"{storage.endpoint_url.rstrip('/')}/{quote(storage.bucket_name)}"
        url += f"/{path}" if key else ""
    credentials = Credentials(storage.access_key, storage.secret_key, storage.security_token)
    error: Exception | None = None
    for _attempt in range(max(1, settings.MGC_S3_MAX_ATTEMPTS)):
        request = AWSRequest(method="GET", url=url, params=params)
        S3SigV4Auth(credentials, "s3", storage.region_name or "us-east-1").add_auth(request)
        prepared = request.prepare()
        try:
            response = _http(storage.verify).request(
                "GET",
                prepared.url,
                headers=dict(prepared.headers.items()),
                retries=False,
                timeout=urllib3.Timeout(
                    connect=settings.MGC_S3_CONNECT_TIMEOUT, read=settings.MGC_S3_READ_TIMEOUT
                ),
            )
        except urllib3.exceptions.HTTPError as exc:
            error = exc
            continue
        if response.status == 200:
            return response.data
        if response.status == 404 and key:
            return None
        error = RuntimeError(f"{response.status} {response.data[:300]!r}")
        if response.status < 500 and response.status != 429:
            break
    raise _failed(error or RuntimeError("no answer"), operation="GetObject" if key else "ListObjectsV2")


def _failed(exc: Exception, *, operation: str) -> StorageUnavailable:
    """A read changes nothing: logged and counted as the storage's failures are, "nothing was
    changed"."""
    logger.warning("S3 %s failed: %s", operation, exc)
    metrics.s3_errors.labels(operation).inc()
    return StorageUnavailable.nothing_changed()


def _http(verify) -> urllib3.PoolManager:
    """Kept-alive connections for the lean requests, shared by all threads (urllib3's pools
    are thread-safe), one manager per TLS verification setting. Certificates are checked
    against what botocore would use: the storage's `verify` path, AWS_CA_BUNDLE, certifi."""
    pool = _pools.get(verify)
    if pool is None:
        if verify is False:
            pool = urllib3.PoolManager(maxsize=16, cert_reqs="CERT_NONE")
        else:
            bundle = (
                verify
                if isinstance(verify, str)
                else (os.environ.get("AWS_CA_BUNDLE") or get_cert_path(True))
            )
            pool = urllib3.PoolManager(maxsize=16, cert_reqs="CERT_REQUIRED", ca_certs=bundle)
        pool = _pools.setdefault(verify, pool)
    return pool
