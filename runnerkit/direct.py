"""The sandbox's direct mode: read and write memory straight in the bucket with the runner's
own S3 credentials (issued by the console, confined to its project's prefix), as a local disk
would be written. Needs boto3 (`pip install runnerkit[s3]`); the rest of runnerkit does not.

Every write is conditional: a changed file is written with `If-Match` on the ETag it was
pulled with, a new one with `If-None-Match: *`, so a file that moved on in the bucket is never
overwritten (the local copy is kept and reported as a conflict). Each object carries metadata
naming the agent and session and an HMAC proof keyed with the sha256 of the runner's token,
which the console checks before it attributes the change to this runner.

    MGC_RUNNER_S3_ENDPOINT_URL, MGC_RUNNER_S3_ACCESS_KEY_ID, MGC_RUNNER_S3_SECRET_ACCESS_KEY
    (and MGC_RUNNER_S3_REGION) configure DirectStorage.from_environment().
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass


def proof(token: str, key: str, body: bytes, session: str) -> str:
    """The HMAC the console checks (projects/memory/provenance.py): keyed with sha256(token)."""
    token_sha = hashlib.sha256(token.encode("utf-8")).hexdigest()
    message = f"{key}\n{hashlib.sha256(body).hexdigest()}\n{session}".encode()
    return hmac.new(token_sha.encode(), message, hashlib.sha256).hexdigest()


@dataclass
class Written:
    status: str  # "written" | "conflict" | "denied"
    etag: str = ""
    message: str = ""


class DirectStorage:
    def __init__(
        self,
        *,
        endpoint_url: str | None,
        access_key_id: str,
        secret_access_key: str,
        region: str = "us-east-1",
        timeout: float = 10.0,
    ):
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:  # pragma: no cover - depends on the runner's install
            raise RuntimeError("Direct mode needs boto3: pip install 'runnerkit[s3]'") from exc
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint_url or None,
            region_name=region,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            config=Config(
                s3={"addressing_style": "path"},
                connect_timeout=timeout,
                read_timeout=timeout,
                retries={"total_max_attempts": 3, "mode": "standard"},
            ),
        )

    @classmethod
    def from_environment(cls) -> DirectStorage:
        env = os.environ
        return cls(
            endpoint_url=env.get("MGC_RUNNER_S3_ENDPOINT_URL"),
            access_key_id=env["MGC_RUNNER_S3_ACCESS_KEY_ID"],
            secret_access_key=env["MGC_RUNNER_S3_SECRET_ACCESS_KEY"],
            region=env.get("MGC_RUNNER_S3_REGION", "us-east-1"),
        )

    def read(self, bucket: str, key: str) -> tuple[bytes, str] | None:
        """(body, etag), or None if the object is not there."""
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return response["Body"].read(), response["ETag"]

    def write(
        self, bucket: str, key: str, body: bytes, *, etag: str | None, agent: str, session: str, token: str
    ) -> Written:
        """Replace the object if it still has `etag` (create it if etag is None)."""
        from botocore.exceptions import ClientError

        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        signature = proof(token, key, body, session)
        try:
            response = self.client.put_object(
                Bucket=bucket,
                Key=key,
                Body=body,
                ContentType="text/markdown; charset=utf-8",
                Metadata={"mgc-agent": agent, "mgc-session": session, "mgc-proof": signature},
                **condition,
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
            if status in (409, 412) or error.get("Code") in (
                "PreconditionFailed",
                "ConditionalRequestConflict",
            ):
                # A retry after a lost answer meets its own write: that is success.
                mine = self._holds(bucket, key, body, signature)
                if mine:
                    return Written("written", etag=mine)
                return Written(
                    "conflict",
                    message="The file changed in the bucket since it was pulled; the local copy is kept.",
                )
            if status == 403 or error.get("Code") == "AccessDenied":
                return Written("denied", message="These S3 credentials may not write it.")
            raise
        return Written("written", etag=response["ETag"])

    def _holds(self, bucket: str, key: str, body: bytes, signature: str) -> str:
        """The object's ETag if it is exactly this write (same bytes, same proof), else ''."""
        response = self.client.get_object(Bucket=bucket, Key=key)
        if response.get("Metadata", {}).get("mgc-proof") == signature and response["Body"].read() == body:
            return response["ETag"]
        return ""
