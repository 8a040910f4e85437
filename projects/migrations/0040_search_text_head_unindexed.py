"""is_head leaves the search copies' indexes: a save clears it on the old head's copy, and while
it was indexed that update was never a HOT one, so PostgreSQL wrote the whole old text's
full-text (GIN) entries again on every save. The head's copy is found by (file, number) now
(memory/indexing.py)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("projects", "0039_hook_floor")]

    operations = [migrations.RemoveIndex(model_name="searchtext", name="search_text_head")]
