"""Search reads ё as е (Russian writes "ежик" and "ёжик" for one word): the PostgreSQL index is
built over the text with ё folded, the expression memory.search.fulltext_match queries."""

from django.db import migrations

INDEX = "projects_searchtext_fts"
FOLDED = ("to_tsvector('simple'::regconfig, "
          "COALESCE(translate(\"text\", 'Ёё', 'Ее'), ''))")
PLAIN = "to_tsvector('simple'::regconfig, COALESCE(\"text\", ''))"


def _index(schema_editor, expression: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")
        schema_editor.execute(
            f"CREATE INDEX {INDEX} ON projects_searchtext USING gin ({expression})")


class Migration(migrations.Migration):
    dependencies = [("projects", "0015_system_text_codes")]
    operations = [migrations.RunPython(lambda apps, editor: _index(editor, FOLDED),
                                       lambda apps, editor: _index(editor, PLAIN))]
