from botocore.exceptions import ClientError
from django.core.files.storage import storages
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the memory bucket if it does not exist (for the demo's local S3 server)."

    def handle(self, *args, **options):
        storage = storages["memory"]
        client = storage.client
        try:
            client.head_bucket(Bucket=storage.bucket_name)
            self.stdout.write(f"Bucket {storage.bucket_name} exists.")
            return
        except ClientError:
            pass
        except Exception as exc:  # connection refused, DNS: say where we tried
            raise CommandError(f"S3 at {storage.endpoint_url} is not reachable: {exc}") from exc
        client.create_bucket(Bucket=storage.bucket_name)
        self.stdout.write(f"Created bucket {storage.bucket_name}.")
