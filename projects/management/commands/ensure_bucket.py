from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.storage import storages
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Create the memory bucket if it does not exist, and turn on versioning and S3 "
        "Object Lock (without a default retention), so that legal holds are enforced by the "
        "storage itself (docs/DEPLOY.md)."
    )

    def handle(self, *args, **options):
        storage = storages["memory"]
        client, bucket = storage.client, storage.bucket_name
        try:
            client.head_bucket(Bucket=bucket)
            self.stdout.write(f"Bucket {bucket} exists.")
        except ClientError:
            client.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
            self.stdout.write(f"Created bucket {bucket} with Object Lock.")
        except Exception as exc:  # connection refused, DNS: say where we tried
            raise CommandError(f"S3 at {storage.endpoint_url} is not reachable: {exc}") from exc
        if storage.object_lock_enabled():
            return
        try:  # on an existing bucket: versioning first, then Object Lock (AWS allows it too)
            client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
            client.put_object_lock_configuration(
                Bucket=bucket, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}
            )
        except (ClientError, BotoCoreError) as exc:
            self.stdout.write(
                self.style.WARNING(
                    f"Object Lock could not be turned on for {bucket} ({exc}): legal holds will be "
                    f"enforced by the console only. docs/DEPLOY.md says what each store needs."
                )
            )
            return
        self.stdout.write(f"Turned on versioning and Object Lock for {bucket}.")
