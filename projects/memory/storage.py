"""The S3 storage that holds agent memory (django-storages, one subclass for one purpose): every
S3 call of the console goes through its methods, which turn S3's answers into the store's
errors. Also the IAM client that issues runners credentials for it.

django-storages does no conditional writes and keeps no versions; `write` adds IfMatch /
IfNoneMatch with the storage's own client, as the store's lost-update protection needs.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError
from botocore.loaders import create_loader
from django.conf import settings
from django.core.files.storage import storages
from django.core.signals import setting_changed
from django.dispatch import receiver
from storages.backends.s3 import S3Storage

from projects import metrics
from projects.memory import lean
from projects.memory.errors import StorageUnavailable

logger = logging.getLogger(__name__)

MARKDOWN_CONTENT_TYPE = "text/markdown; charset=utf-8"


class PreconditionFailed(Exception):
    """A conditional write found another object than the one it was conditioned on."""


class ObjectHeld(Exception):
    """The store refused to delete a version: an S3 Object Lock legal hold stands on it."""


class LegalHoldUnsupported(Exception):
    """The bucket has no Object Lock, so the store can hold nothing in it."""


@dataclass(frozen=True)
class StoredObject:
    body: bytes
    etag: str
    metadata: dict[str, str]
    size: int = -1  # the object's whole size; more than len(body) when the read was bounded
    version_id: str = ""

    @property
    def whole(self) -> bool:
        return self.size == len(self.body)


def error_code(exc: Exception) -> str:
    """The error code S3 or IAM answered (botocore's ClientError); '' for anything else."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def _is_precondition_failed(exc: ClientError) -> bool:
    return _status(exc) in (409, 412) or error_code(exc) in {
        "PreconditionFailed",
        "ConditionalRequestConflict",
    }


def _is_missing(exc: ClientError) -> bool:
    return _status(exc) == 404 or error_code(exc) in {"NoSuchKey", "404", "NotFound"}


def _failed(exc: Exception, *, outcome: str = "not_applied", operation: str = "") -> StorageUnavailable:
    """Logged and counted in mgc_s3_errors_total by operation: the one named, else botocore's
    (a ClientError knows its operation), else "unknown"."""
    operation = operation or getattr(exc, "operation_name", "") or "unknown"
    logger.warning("S3 %s failed: %s", operation, exc)
    metrics.s3_errors.labels(operation).inc()
    if outcome == "unknown":
        return StorageUnavailable.outcome_unknown()
    return StorageUnavailable.nothing_changed()


_LOADER = create_loader()


class MemoryStorage(S3Storage):
    """Memory files: Markdown objects, readable as they stand in the bucket."""

    def __init__(self, **options):
        if options.get("client_config") is None:
            options["client_config"] = Config(
                s3={"addressing_style": options.get("addressing_style", "path")},
                signature_version=options.get("signature_version", "s3v4"),
                connect_timeout=settings.MGC_S3_CONNECT_TIMEOUT,
                read_timeout=settings.MGC_S3_READ_TIMEOUT,
                retries={"total_max_attempts": settings.MGC_S3_MAX_ATTEMPTS, "mode": "standard"},
            )
        super().__init__(**options)

    def _create_session(self):
        # django-storages gives each thread's connection a session of its own, and each
        # session would parse botocore's S3 model files again (about 0.2 s, the first S3 call
        # of every request thread). One loader per process parses them once; it only caches
        # what it read, so threads may share it.
        session = super()._create_session()
        session._session.register_component("data_loader", _LOADER)
        return session

    def get_object_parameters(self, name):
        params = super().get_object_parameters(name)
        params.setdefault("ContentType", MARKDOWN_CONTENT_TYPE)
        return params

    @property
    def client(self):
        """The low-level boto3 client of this thread's connection."""
        return self.connection.meta.client

    # --- Objects ---------------------------------------------------------------------------

    def read(self, key: str, if_match: str = "", max_bytes: int | None = None) -> StoredObject | None:
        """The object, or None if it is missing (or no longer has ETag `if_match`). With
        `max_bytes`, at most that many bytes and one more are fetched (a Range request): an
        object anyone could have written is never read whole into memory; `size` says how
        large it really is."""
        params = {"Bucket": self.bucket_name, "Key": key}
        if if_match:
            params["IfMatch"] = if_match
        if max_bytes is not None:
            params["Range"] = f"bytes=0-{max_bytes}"
        try:
            response = self.client.get_object(**params)
            body = response["Body"].read()
            size = len(body)
            if "ContentRange" in response:  # "bytes 0-262144/20971520"
                size = int(response["ContentRange"].rpartition("/")[2])
            return StoredObject(
                body,
                response["ETag"],
                response.get("Metadata", {}),
                size,
                response.get("VersionId", "") or "",
            )
        except ClientError as exc:
            if _is_missing(exc) or (if_match and _is_precondition_failed(exc)):
                return None
            if max_bytes is not None and _status(exc) == 416:  # an empty object has no byte 0
                return self.read(key, if_match=if_match)
            raise _failed(exc, operation="GetObject") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="GetObject") from exc

    def sha256_of(self, key: str, etag: str, max_bytes: int) -> str | None:
        """sha256 of the object at `key` if it still has `etag` and holds at most `max_bytes`,
        read in chunks (never whole in memory); None otherwise."""
        digest = hashlib.sha256()
        try:
            response = self.client.get_object(Bucket=self.bucket_name, Key=key, IfMatch=etag)
            if response.get("ContentLength", 0) > max_bytes:
                response["Body"].close()
                return None
            for chunk in response["Body"].iter_chunks(1 << 20):
                digest.update(chunk)
        except ClientError as exc:
            if _is_missing(exc) or _is_precondition_failed(exc):
                return None
            raise _failed(exc, operation="GetObject") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="GetObject") from exc
        return digest.hexdigest()

    def describe(self, key: str) -> StoredObject | None:
        """An object's ETag, size, version and metadata without its body (HEAD); None if missing."""
        try:
            response = self.client.head_object(Bucket=self.bucket_name, Key=key)
        except ClientError as exc:
            if _is_missing(exc):
                return None
            raise _failed(exc, operation="HeadObject") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="HeadObject") from exc
        return StoredObject(
            b"",
            response["ETag"],
            response.get("Metadata", {}),
            int(response.get("ContentLength", 0)),
            response.get("VersionId", "") or "",
        )

    def metadata(self, key: str) -> dict[str, str] | None:
        """An object's user metadata (HEAD), None if it is missing."""
        try:
            return self.client.head_object(Bucket=self.bucket_name, Key=key).get("Metadata", {})
        except ClientError as exc:
            if _is_missing(exc):
                return None
            raise _failed(exc, operation="HeadObject") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="HeadObject") from exc

    def write(
        self,
        key: str,
        data: bytes,
        *,
        metadata: dict | None = None,
        if_match: str = "",
        if_none_match: bool = False,
        ambiguous: str = "not_applied",
        legal_hold: bool = False,
    ) -> str:
        """Write an object and return its new ETag; PreconditionFailed if the condition does
        not hold. `ambiguous="unknown"` says a lost answer may hide a done write (the error
        then says the outcome is unknown). `legal_hold`: the new version carries an S3 Object
        Lock legal hold from the moment it exists (the bucket needs Object Lock)."""
        params = {"Bucket": self.bucket_name, "Key": key, "Body": data, "ContentType": MARKDOWN_CONTENT_TYPE}
        if metadata:
            params["Metadata"] = metadata
        if legal_hold:
            params["ObjectLockLegalHoldStatus"] = "ON"
        if if_match:
            params["IfMatch"] = if_match
        elif if_none_match:
            params["IfNoneMatch"] = "*"
        try:
            return self.client.put_object(**params)["ETag"]
        except ClientError as exc:
            if (if_match or if_none_match) and _is_precondition_failed(exc):
                raise PreconditionFailed(key) from exc
            raise _failed(
                exc, outcome=ambiguous if _status(exc) >= 500 else "not_applied", operation="PutObject"
            ) from exc
        except BotoCoreError as exc:
            raise _failed(exc, outcome=ambiguous, operation="PutObject") from exc

    def remove(self, key: str, version_id: str = "") -> None:
        """Delete an object (a delete marker in a versioned bucket), or one version of it.
        ObjectHeld when the store refuses: a legal hold stands on that version."""
        params = {"Bucket": self.bucket_name, "Key": key}
        if version_id:
            params["VersionId"] = version_id
        try:
            self.client.delete_object(**params)
        except ClientError as exc:
            if version_id and error_code(exc) == "AccessDenied":
                raise ObjectHeld(key) from exc
            raise _failed(exc, outcome="unknown", operation="DeleteObject") from exc
        except BotoCoreError as exc:
            raise _failed(exc, outcome="unknown", operation="DeleteObject") from exc

    def write_retained(
        self, key: str, data: bytes, *, content_type: str, mode: str, retain_until, metadata: dict
    ) -> tuple[str, str]:
        """Write a new object kept under S3 Object Lock retention (`mode` COMPLIANCE or
        GOVERNANCE until `retain_until`; no retention when `mode` is empty), only where the
        key is free (IfNoneMatch). Returns (ETag, VersionId); PreconditionFailed when the key
        holds an object already; LegalHoldUnsupported when the bucket has no Object Lock."""
        params = {
            "Bucket": self.bucket_name,
            "Key": key,
            "Body": data,
            "ContentType": content_type,
            "Metadata": metadata,
            "IfNoneMatch": "*",
        }
        if mode:
            params.update(ObjectLockMode=mode, ObjectLockRetainUntilDate=retain_until)
        try:
            answer = self.client.put_object(**params)
        except ClientError as exc:
            if _is_precondition_failed(exc):
                raise PreconditionFailed(key) from exc
            if mode and error_code(exc) in {"InvalidRequest", "InvalidBucketState", "NotImplemented"}:
                raise LegalHoldUnsupported(self.bucket_name) from exc
            raise _failed(exc, outcome="unknown" if _status(exc) >= 500 else "not_applied") from exc
        except BotoCoreError as exc:
            raise _failed(exc, outcome="unknown") from exc
        return answer["ETag"], answer.get("VersionId", "") or ""

    def read_version(self, key: str, version_id: str = "") -> StoredObject | None:
        """One version of an object (the current one without `version_id`), None if missing."""
        params = {"Bucket": self.bucket_name, "Key": key}
        if version_id:
            params["VersionId"] = version_id
        try:
            response = self.client.get_object(**params)
            body = response["Body"].read()
        except ClientError as exc:
            if _is_missing(exc) or error_code(exc) in {"NoSuchVersion", "InvalidArgument"}:
                return None
            raise _failed(exc) from exc
        except BotoCoreError as exc:
            raise _failed(exc) from exc
        return StoredObject(body, response["ETag"], response.get("Metadata", {}), len(body), version_id)

    # --- Object Lock -------------------------------------------------------------------------

    def set_legal_hold(self, key: str, version_id: str, on: bool) -> None:
        """Turn an S3 legal hold on or off for one version. LegalHoldUnsupported when the
        bucket has no Object Lock (the store cannot hold anything there)."""
        try:
            self.client.put_object_legal_hold(
                Bucket=self.bucket_name,
                Key=key,
                VersionId=version_id,
                LegalHold={"Status": "ON" if on else "OFF"},
            )
        except ClientError as exc:
            if error_code(exc) in {
                "InvalidRequest",
                "ObjectLockConfigurationNotFoundError",
                "InvalidBucketState",
            }:
                raise LegalHoldUnsupported(self.bucket_name) from exc
            if _is_missing(exc):
                return  # the version is gone: nothing to hold
            raise _failed(exc, operation="PutObjectLegalHold") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="PutObjectLegalHold") from exc

    def legal_hold(self, key: str, version_id: str) -> bool:
        """Whether the store holds this version (GetObjectLegalHold)."""
        try:
            response = self.client.get_object_legal_hold(
                Bucket=self.bucket_name, Key=key, VersionId=version_id
            )
        except ClientError as exc:
            if error_code(exc) in {"NoSuchObjectLegalHold", "InvalidRequest"} or _is_missing(exc):
                return False
            raise _failed(exc, operation="GetObjectLegalHold") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="GetObjectLegalHold") from exc
        return response.get("LegalHold", {}).get("Status") == "ON"

    def object_lock_enabled(self) -> bool:
        """Whether the bucket has S3 Object Lock. Only the store saying there is no lock
        configuration means no: a failed request is StorageUnavailable (a hold placed while
        the store stumbles must not be written off as one the store cannot enforce)."""
        try:
            config = self.client.get_object_lock_configuration(Bucket=self.bucket_name)
        except ClientError as exc:
            if _status(exc) in (400, 404) or error_code(exc) in {
                "ObjectLockConfigurationNotFoundError",
                "NoSuchObjectLockConfiguration",
                "InvalidRequest",
            }:
                return False
            raise _failed(exc, operation="GetObjectLockConfiguration") from exc
        except BotoCoreError as exc:
            raise _failed(exc, operation="GetObjectLockConfiguration") from exc
        return config.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled") == "Enabled"

    def listing(self, prefix: str) -> list[dict]:
        """Every object under a prefix: dicts with Key, LastModified, ETag, Size."""
        objects: list[dict] = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket_name, Prefix=prefix
            ):
                objects.extend(page.get("Contents", []))
        except (ClientError, BotoCoreError) as exc:
            raise _failed(exc, operation="ListObjectsV2") from exc
        return objects

    # --- The pre hook's reads, without botocore's client (memory/lean.py) -------------------

    def etags(self, prefix: str) -> dict[str, str]:
        """Key -> ETag of every object under a prefix: the pre hook's freshness check."""
        if not lean.usable(self):
            return {obj["Key"]: obj["ETag"] for obj in self.listing(prefix)}
        return lean.etags(self, prefix)

    def body(self, key: str) -> bytes | None:
        """An object's bytes, None if it is missing (an immutable snapshot: no ETag needed)."""
        if not lean.usable(self):
            found = self.read(key)
            return found.body if found else None
        return lean.signed_get(self, key, {})

    def versions(self, prefix: str) -> list[dict]:
        """Every stored version and delete marker under a prefix (Key, VersionId)."""
        found: list[dict] = []
        try:
            for page in self.client.get_paginator("list_object_versions").paginate(
                Bucket=self.bucket_name, Prefix=prefix
            ):
                found.extend(page.get("Versions", []) + page.get("DeleteMarkers", []))
        except (ClientError, BotoCoreError) as exc:
            raise _failed(exc, operation="ListObjectVersions") from exc
        return found

    def versions_page(
        self, prefix: str, *, key_marker: str = "", version_marker: str = "", max_keys: int = 1000
    ) -> VersionsPage:
        """One page of ListObjectVersions under a prefix, from a place a previous page gave:
        the versions (no delete markers), where the next page starts, and the store's clock
        when it answered (the Date header: a sweep's mark that needs no agreement between
        clocks)."""
        params = {"Bucket": self.bucket_name, "Prefix": prefix, "MaxKeys": max_keys}
        if key_marker:
            params["KeyMarker"] = key_marker
            if version_marker:
                params["VersionIdMarker"] = version_marker
        try:
            page = self.client.list_object_versions(**params)
        except (ClientError, BotoCoreError) as exc:
            raise _failed(exc, operation="ListObjectVersions") from exc
        date = page.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date", "")
        try:
            answered = parsedate_to_datetime(date) if date else None
        except (TypeError, ValueError):
            answered = None
        if answered is not None and answered.tzinfo is None:
            answered = answered.replace(tzinfo=UTC)  # "-0000": UTC, time zone not said
        truncated = bool(page.get("IsTruncated"))
        return VersionsPage(
            versions=page.get("Versions", []),
            next_key=page.get("NextKeyMarker", "") if truncated else "",
            next_version=page.get("NextVersionIdMarker", "") if truncated else "",
            truncated=truncated,
            date=answered or datetime.now(UTC),
        )


@dataclass(frozen=True)
class VersionsPage:
    versions: list[dict]
    next_key: str
    next_version: str
    truncated: bool
    date: datetime


_bucket_storages: dict[str, MemoryStorage] = {}
_probe_clients: dict[tuple, object] = {}


@receiver(setting_changed)
def _forget_storages(*, setting, **kwargs):
    if setting in {"STORAGES", "MGC_S3_OPTIONS"}:
        _bucket_storages.clear()
        _probe_clients.clear()


def storage_for(project) -> MemoryStorage:
    """The storage holding a project's memory: the console's, or the project's own bucket."""
    return bucket_storage(project.bucket)


def bucket_storage(bucket: str = "") -> MemoryStorage:
    """The console's storage for a bucket ('' or the console's own: the default one)."""
    default = storages["memory"]
    if not bucket or bucket == default.bucket_name:
        return default
    storage = _bucket_storages.get(bucket)
    if storage is None:
        options = dict(settings.STORAGES["memory"].get("OPTIONS", {}), bucket_name=bucket)
        storage = _bucket_storages[bucket] = MemoryStorage(**options)
    return storage


def bucket_answers() -> str:
    """Whether the console's bucket answers a signed HEAD now: '' if it does, else what went
    wrong, named without its message (`unreachable`, `timeout`, or S3's error code). For the
    readiness probe: a client of its own with short timeouts and one attempt, so a store that
    is down answers the probe in about a second, not after the save path's retries."""
    options = settings.STORAGES["memory"]["OPTIONS"]
    key = (options.get("endpoint_url"), options.get("access_key"), options.get("region_name"))
    client = _probe_clients.get(key)
    if client is None:
        client = _probe_clients[key] = boto3.client(
            "s3",
            endpoint_url=options.get("endpoint_url") or None,
            region_name=options.get("region_name") or "us-east-1",
            aws_access_key_id=options.get("access_key"),
            aws_secret_access_key=options.get("secret_key"),
            config=Config(
                s3={"addressing_style": options.get("addressing_style", "path")},
                signature_version="s3v4",
                connect_timeout=1,
                read_timeout=2,
                retries={"total_max_attempts": 1},
            ),
        )
    try:
        client.head_bucket(Bucket=storages["memory"].bucket_name)
    except ClientError as exc:
        return error_code(exc) or str(_status(exc))
    except (ConnectTimeoutError, ReadTimeoutError):
        return "timeout"
    except BotoCoreError:
        return "unreachable"
    return ""


def iam_client():
    """An IAM client signed with the console's own S3 credentials (SeaweedFS and Ceph RGW
    serve IAM on the S3 endpoint; AWS at its global endpoint when both URLs are empty)."""
    options = settings.STORAGES["memory"]["OPTIONS"]
    return boto3.client(
        "iam",
        endpoint_url=settings.MGC_S3_IAM_ENDPOINT_URL or options.get("endpoint_url") or None,
        region_name=options.get("region_name") or "us-east-1",
        aws_access_key_id=options.get("access_key"),
        aws_secret_access_key=options.get("secret_key"),
        config=Config(
            connect_timeout=settings.MGC_S3_CONNECT_TIMEOUT,
            read_timeout=settings.MGC_S3_READ_TIMEOUT,
            retries={"total_max_attempts": settings.MGC_S3_MAX_ATTEMPTS, "mode": "standard"},
        ),
    )
