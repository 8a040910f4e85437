"""The S3 storage that holds agent memory (django-storages, one subclass for one purpose), and
the IAM client that issues runners credentials for it."""

import boto3
from botocore.config import Config
from django.conf import settings
from storages.backends.s3 import S3Storage

MARKDOWN_CONTENT_TYPE = "text/markdown; charset=utf-8"


class MemoryStorage(S3Storage):
    """Memory files: Markdown objects, readable as they stand in the bucket.

    django-storages does no conditional writes and keeps no versions; the store builds the
    lost-update protection on top (see projects/store.py), using `client` for the puts
    that need IfMatch / IfNoneMatch.
    """

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

    def get_object_parameters(self, name):
        params = super().get_object_parameters(name)
        params.setdefault("ContentType", MARKDOWN_CONTENT_TYPE)
        return params

    @property
    def client(self):
        """The low-level boto3 client of this thread's connection."""
        return self.connection.meta.client


def iam_client():
    """An IAM client signed with the console's own S3 credentials (SeaweedFS and MinIO serve
    IAM on the S3 endpoint; AWS at its global endpoint when MGC_S3_IAM_ENDPOINT_URL is empty)."""
    options = settings.STORAGES["memory"]["OPTIONS"]
    return boto3.client(
        "iam", endpoint_url=settings.MGC_S3_IAM_ENDPOINT_URL or options.get("endpoint_url") or None,
        region_name=options.get("region_name") or "us-east-1",
        aws_access_key_id=options.get("access_key"),
        aws_secret_access_key=options.get("secret_key"),
        config=Config(connect_timeout=settings.MGC_S3_CONNECT_TIMEOUT,
                      read_timeout=settings.MGC_S3_READ_TIMEOUT,
                      retries={"total_max_attempts": settings.MGC_S3_MAX_ATTEMPTS,
                               "mode": "standard"}))
