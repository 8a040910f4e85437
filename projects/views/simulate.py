"""The prompt an agent would be given, for a person and a moment, section by section, with
tokens against the caps (a download of it too). No side effects."""

from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from projects.errors import explain
from projects.governance import permissions
from projects.governance.trail import audit_read
from projects.models import Agent, Membership
from projects.runners import context as prompt_context
from projects.runners import origins as prompt_origins
from projects.views.base import on_refusal_show, project_view
from projects.views.provenance import prompt_rows


@project_view()
def simulate_view(request, project, role):
    """The prompt exactly as the runner would receive it, section by section. No side effects."""
    agents = list(Agent.objects.filter(project=project).order_by("name"))
    members = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    if not permissions.sees_everyone(role):
        members = members.filter(user=request.user)  # "what does the agent know about me"
    members = list(members)
    # An unknown agent or person is said so in words, never quietly replaced (an employee
    # asking for anyone else gets the same words whether that person exists or not).
    wanted_agent = request.GET.get("agent", "").strip()
    wanted_user = request.GET.get("user", "").strip()
    agent = next((a for a in agents if a.slug == wanted_agent), None)
    user, problem = None, ""
    if agent is None and wanted_agent:
        problem = _("This project has no agent called %(name)s.") % {"name": wanted_agent}
    elif agent is None and agents:
        agent = agents[0]
    if wanted_user:  # a username, or a member's id (links made before usernames)
        user = next((m.user for m in members if m.user.get_username() == wanted_user), None) or next(
            (m.user for m in members if str(m.user_id) == wanted_user), None
        )
        if user is None:
            problem = problem or (
                _("No member of this project is called %(name)s.") % {"name": wanted_user}
                if permissions.sees_everyone(role)
                else _("You can see only what agents are told about you.")
            )
    elif not permissions.sees_everyone(role):
        user = request.user
    context = {
        "project": project,
        "role": role,
        "agents": agents,
        "members": members,
        "agent": agent,
        "selected_user": user,
        "at_raw": request.GET.get("at", ""),
    }
    if problem:
        context["error"] = problem
        return render(request, "projects/simulate.html", context, status=400)
    if agent is None:
        return render(request, "projects/simulate.html", context)
    try:
        # Refused by the storage: the form stays, to pick another agent, person or moment.
        with on_refusal_show("projects/simulate.html", context):
            at = prompt_context.parse_moment(context["at_raw"])
            assembly = prompt_context.build_context(agent=agent, user=user, at=at)
    except ValidationError as exc:
        context["error"] = explain(exc)
        return render(request, "projects/simulate.html", context, status=400)
    audit_read(
        user=request.user,
        role=role,
        action="read.simulate",
        project=project,
        obj=agent,
        details={
            "user": user.get_username() if user else None,
            "at": at.isoformat() if at else None,
            "prompt_sha256": assembly.sha256,
        },
    )
    if request.GET.get("download"):
        response = HttpResponse(assembly.prompt, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{agent.slug}-prompt.txt"'
        return response
    file_ids = {f.file_id for s in assembly.sections for f in s.files}
    budget = assembly.budget or 0
    rows = []
    for section in assembly.sections:
        rows.append(
            {
                "section": section,
                "percent": round(100 * section.tokens / budget, 1) if budget else None,
            }
        )
    with on_refusal_show("projects/simulate.html", context):
        origin_rows = prompt_rows(request, project, role, prompt_origins.assembly_origins(project, assembly))
    context.update(
        assembly=assembly,
        rows=rows,
        origin_rows=origin_rows,
        open_origins=bool(request.GET.get("origins")),
        at=at,
        file_ids=file_ids,
        used_percent=round(100 * assembly.total_tokens / budget, 1) if budget else None,
    )
    return render(request, "projects/simulate.html", context)
