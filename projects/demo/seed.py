"""Writes that are not memory content: demo data for now."""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction

from projects.audit import Actor
from projects.demo.content import PEOPLE, PROJECTS
from projects.governance import retention
from projects.memory import layout, records, store
from projects.models import Agent, AgentSession, Membership, MemoryFile, Project
from projects.runners import bearer, hooks, prehook
from projects.runners.agent_settings import agent_settings_update


@transaction.atomic
def _people(password: str) -> dict:
    User = get_user_model()
    users = {}
    admin, _ = User.objects.get_or_create(username="admin", defaults={"email": "admin@example.com"})
    admin.is_staff = admin.is_superuser = True
    admin.first_name, admin.last_name = "Admin", "User"
    admin.set_password(password)
    admin.save()
    users["admin"] = admin
    for username, (first, last, _roles) in PEOPLE.items():
        user, _ = User.objects.get_or_create(username=username)
        user.first_name, user.last_name = first, last
        user.email = f"{username}@example.com"
        user.set_password(password)
        user.save()
        users[username] = user
    # The compliance officer handles subjects' requests of every project (the console's register).
    users["compliance"].user_permissions.add(
        Permission.objects.get(codename="handle_all_subject_requests", content_type__app_label="projects")
    )
    return users


# What a company might keep: tool and error logs a month, workspace memory a year, the newest
# 20 revisions of each file (and any younger than 90 days), sessions and prompts half a year.
DEMO_RETENTION = [
    {"kind": "files", "glob": "workspace/logs/**", "days": 30},
    {"kind": "files", "glob": "workspace/**", "days": 365},
    {"kind": "history", "glob": "workspace/**", "keep_revisions": 20, "days": 90},
    {"kind": "sessions", "days": 180},
    {"kind": "prompts", "days": 180},
    {"kind": "idempotency", "days": 7},
]


def demo_seed(*, password: str) -> list[str]:
    """Create (idempotently) the demo projects, people and memory; return what was done."""
    users = _people(password)
    admin_actor = Actor.person(users["admin"])
    done = []
    for spec in PROJECTS:
        project, created = Project.objects.get_or_create(
            slug=spec["slug"], defaults={"name": spec["name"], "description": spec["description"]}
        )
        done.append(f"project {project.slug} ({'created' if created else 'exists'})")
        for username, (_f, _l, roles) in PEOPLE.items():
            if spec["slug"] in roles:
                Membership.objects.get_or_create(
                    user=users[username], project=project, defaults={"role": roles[spec["slug"]]}
                )
        agent_spec = spec["agent"]
        agent, _ = Agent.objects.get_or_create(
            project=project,
            slug=agent_spec["slug"],
            defaults={"name": agent_spec["name"], "description": agent_spec["description"]},
        )
        for name in layout.AGENT_FILES:
            _ensure(
                project, admin_actor, [agent_spec[name]], scope=MemoryFile.Scope.AGENT, agent=agent, path=name
            )
        for username, text in spec["profiles"].items():
            _ensure(
                project,
                Actor.person(users[username]),
                [text],
                scope=MemoryFile.Scope.USER,
                user=users[username],
                path="USER.md",
            )
        for path, versions in spec["workspace"].items():
            _ensure(
                project,
                Actor.for_agent(agent, "demo-session"),
                versions,
                scope=MemoryFile.Scope.WORKSPACE,
                path=path,
            )
        if created:  # a retention schedule to preview (project page -> Retention)
            for rule in DEMO_RETENTION:
                retention.rule_add(by=users["admin"], project=project, **rule)
    analyst = Agent.objects.get(project__slug=PROJECTS[0]["slug"], slug=PROJECTS[0]["agent"]["slug"])
    done += _demo_runs(analyst, users)
    _, raw = bearer.token_create(agent=analyst, name="demo runner", created_by=users["admin"])
    done.append(f"runner token for {analyst.slug}: {raw}")
    url = os.environ.get("MGC_DEMO_URL", "http://127.0.0.1:8000")  # scripts/demo.sh says where
    done.append(f"try: python examples/runner.py --url {url} --token {raw} --user employee")
    return done


def _demo_runs(analyst: Agent, users: dict) -> list[str]:
    """A few agent runs through the real hooks, so that receipts, a proposal waiting for the
    employee's consent and a truncated prompt are there to see. Once: skipped when the agents
    have run before."""
    if AgentSession.objects.exists():
        return []
    employee = users["employee"]
    session, _ = prehook.hook_pre(agent=analyst, user=employee, external_ref="demo-run-1")
    hooks.hook_post(
        session=session,
        summary="Triaged the overnight alert.",
        writes=[
            hooks.WriteRequest(
                "workspace/incidents/2026-12-03-overnight-alert.md",
                "append",
                "# Overnight alert\n\nDisk pressure on db-2; cleared by log rotation.\n",
            ),
            hooks.WriteRequest("USER.md", "append", "- Prefers incident summaries before 10:00.\n"),
        ],
    )
    reporter = Agent.objects.filter(slug="daily-reporter").first()
    if reporter is None:
        return ["agent runs: 1 (incident-analyst)"]
    # The reporter's workspace section is capped tight, so its prompts are cut: the dashboard,
    # its page and its sessions say so.
    manifest = dict(reporter.manifest)
    manifest["sections"] = [
        dict(s, max_tokens=60) if s["tag"] == "workspace_memory" else s for s in manifest["sections"]
    ]
    agent_settings_update(agent=reporter, by=users["admin"], manifest=manifest)
    reader = users.get("anna.smirnova") or employee
    prehook.hook_pre(agent=Agent.objects.get(pk=reporter.pk), user=reader, external_ref="demo-run-2")
    return ["agent runs: 2 (incident-analyst, daily-reporter with a truncated prompt)"]


def _ensure(project: Project, actor: Actor, versions: list[str], **where) -> None:
    existing = records.file_lookup(project=project, **where)
    if existing is not None and existing.head is not None:
        return
    revision = store.file_create(
        project=project, content=versions[0], actor=actor, message="Initial version", **where
    )
    file = MemoryFile.objects.select_related("head", "project").get(pk=revision.file_id)
    for number, text in enumerate(versions[1:], start=1):
        store.file_save(
            file=file, content=text, actor=actor, base_revision=number, message=f"Update {number}"
        )
