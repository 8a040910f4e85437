"""Agents still on the old default manifest (never edited) stop injecting their own tool and
error logs: the workspace section leaves out workspace/logs/**.md, as the new default does.
An edited manifest is left as its admin made it (the settings page warns about logs)."""

from django.db import migrations

OLD_WORKSPACE = {"tag": "workspace_memory", "source": "workspace/**.md", "max_tokens": 6000}
NEW_WORKSPACE = {"tag": "workspace_memory", "source": "workspace/**.md",
                 "exclude": ["workspace/logs/**.md"], "max_tokens": 6000}
OLD_DEFAULT = {
    "sections": [
        {"tag": "agent_identity", "source": "SOUL.md", "max_tokens": 2000},
        {"tag": "agent_rules", "source": "AGENTS.md", "max_tokens": 4000},
        {"tag": "tool_instructions", "source": "TOOLS.md", "max_tokens": 3000},
        {"tag": "user_profile", "source": "USER.md", "max_tokens": 1500},
        OLD_WORKSPACE,
    ],
    "total_tokens": 16000,
}


def _swap(apps, old, new):
    Agent = apps.get_model("projects", "Agent")
    for agent in Agent.objects.all():
        if agent.manifest == {**OLD_DEFAULT, "sections": [*OLD_DEFAULT["sections"][:4], old]}:
            agent.manifest = {**OLD_DEFAULT, "sections": [*OLD_DEFAULT["sections"][:4], new]}
            agent.save(update_fields=["manifest"])


def forwards(apps, schema_editor):
    _swap(apps, OLD_WORKSPACE, NEW_WORKSPACE)


def backwards(apps, schema_editor):
    _swap(apps, NEW_WORKSPACE, OLD_WORKSPACE)


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0019_rename_and_delete_writes"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
