"""Full-text index for search on PostgreSQL. The expression is exactly what
SearchVector("text", config="simple") compiles to, so the planner can use it. Other databases
search with LIKE and need no index here."""

from django.db import migrations

INDEX = "projects_searchtext_fts"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS {INDEX} ON projects_searchtext USING gin '
            "(to_tsvector('simple'::regconfig, COALESCE(\"text\", '')))")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("projects", "0006_search_text")]
    operations = [migrations.RunPython(create, drop)]
