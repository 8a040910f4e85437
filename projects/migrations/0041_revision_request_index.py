"""An index for the question every runner write asks first, "did this request make a revision
already?" (store._made_by): without it PostgreSQL read every revision of the file to answer
no (10,000 revisions: about 3 ms a post). Partial: only revisions made by a runner request
with an Idempotency-Key carry a request_ref."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("projects", "0040_search_text_head_unindexed")]

    operations = [
        migrations.AddIndex(
            model_name="revision",
            index=models.Index(
                condition=models.Q(("request_ref", ""), _negated=True),
                fields=["file", "request_ref"],
                name="revision_request",
            ),
        ),
    ]
