"""The AWS IAM policy grammar for S3 (which SeaweedFS, MinIO, Ceph RGW and VK Cloud accept as
well): resources and the listing statement that confines ListBucket to some prefixes. The
policies themselves are built by governance.isolation (a project) and runners.credentials (a
runner)."""

from __future__ import annotations


def arn(bucket: str, key_pattern: str = "") -> str:
    return f"arn:aws:s3:::{bucket}" + (f"/{key_pattern}" if key_pattern else "")


def list_statement(bucket: str, prefixes: list[str]) -> dict:
    return {
        "Sid": "ListOnlyOwnPrefix",
        "Effect": "Allow",
        "Action": ["s3:ListBucket", "s3:ListBucketVersions"],
        "Resource": arn(bucket),
        "Condition": {"StringLike": {"s3:prefix": [p + "*" for p in prefixes]}},
    }
