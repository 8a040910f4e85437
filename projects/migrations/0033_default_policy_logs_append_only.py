"""Agents still on the old default hook policy (never edited) get the new default: their own
tool and error logs (workspace/logs/**.md) are append-only, so an agent adds to the record of
what it did and never rewrites it. An edited policy is left as its admin made it (the settings
page says when it lets the agent rewrite its logs). Runners' S3 credentials keep the policy
they were issued with until the hook policy is saved again (the settings page says so too)."""

from django.db import migrations

OLD_DEFAULT = {
    "post": {
        "AGENTS.md": {"modes": ["append"], "approval": True},
        "USER.md": {"modes": ["append"], "approval": True},
        "workspace/**.md": {"modes": ["append", "replace"], "approval": False},
    },
    "tool": {"log": "workspace/logs/tools.md"},
    "error": {"log": "workspace/logs/errors.md"},
}
LOGS = "workspace/logs/**.md"
NEW_DEFAULT = {
    **OLD_DEFAULT,
    "post": {**OLD_DEFAULT["post"], LOGS: {"modes": ["append"], "approval": False}},
}
BATCH = 500


def _swap(apps, old, new):
    Agent = apps.get_model("projects", "Agent")
    last = None
    while True:  # in batches by primary key: a console with many agents never loads them all
        agents = Agent.objects.order_by("pk").only("pk", "hook_policy")
        if last is not None:
            agents = agents.filter(pk__gt=last)
        batch = list(agents[:BATCH])
        if not batch:
            return
        for agent in batch:
            if agent.hook_policy == old:
                agent.hook_policy = new
                agent.save(update_fields=["hook_policy"])
        last = batch[-1].pk


def forwards(apps, schema_editor):
    _swap(apps, OLD_DEFAULT, NEW_DEFAULT)


def backwards(apps, schema_editor):
    _swap(apps, NEW_DEFAULT, OLD_DEFAULT)


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0032_scim_provisioning"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
