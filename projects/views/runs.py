"""Simulate injection, agent settings (manifest, hook policy, tokens), sessions, proposals."""

import datetime as dt
import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from projects import agent_forms, drafts
from projects.errors import explain
from projects.forms import JsonSettingForm, TokenForm
from projects.governance import permissions, setup
from projects.governance.trail import audit_read, audit_reads
from projects.memory import errors, receipts, store
from projects.memory.content import appended
from projects.memory.diffing import diff_texts
from projects.models import (
    Agent,
    AgentSession,
    AgentToken,
    Membership,
    MemoryFile,
    Proposal,
    RunnerCredential,
    SessionEvent,
)
from projects.runners import bearer, credentials
from projects.runners import context as prompt_context
from projects.runners.agent_settings import agent_settings_update
from projects.runners.policy import HookError
from projects.runners.proposals import proposal_approve, proposal_reject
from projects.views import paging


@login_required
def simulate(request, slug):
    """The prompt exactly as the runner would receive it, section by section. No side effects."""
    project, role = permissions.project_or_404(request.user, slug)
    agents = list(Agent.objects.filter(project=project).order_by("name"))
    members = (Membership.objects.filter(project=project).select_related("user")
               .order_by("user__username"))
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
        user = next((m.user for m in members if m.user.get_username() == wanted_user), None) \
            or next((m.user for m in members if str(m.user_id) == wanted_user), None)
        if user is None:
            problem = problem or (
                _("No member of this project is called %(name)s.") % {"name": wanted_user}
                if permissions.sees_everyone(role)
                else _("You can see only what agents are told about you."))
    elif not permissions.sees_everyone(role):
        user = request.user
    context = {"project": project, "role": role, "agents": agents, "members": members,
               "agent": agent, "selected_user": user, "at_raw": request.GET.get("at", "")}
    if problem:
        context["error"] = problem
        return render(request, "projects/simulate.html", context, status=400)
    if agent is None:
        return render(request, "projects/simulate.html", context)
    try:
        at = prompt_context.parse_moment(context["at_raw"])
        assembly = prompt_context.build_context(agent=agent, user=user, at=at)
    except ValidationError as exc:
        context["error"] = explain(exc)
        return render(request, "projects/simulate.html", context, status=400)
    except errors.StoreError as exc:
        context["error"] = exc.message
        return render(request, "projects/simulate.html", context, status=503)
    audit_read(user=request.user, role=role, action="read.simulate", project=project, obj=agent,
               details={"user": user.get_username() if user else None,
                        "at": at.isoformat() if at else None,
                        "prompt_sha256": assembly.sha256})
    if request.GET.get("download"):
        response = HttpResponse(assembly.prompt, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{agent.slug}-prompt.txt"'
        return response
    file_ids = {f.file_id for s in assembly.sections for f in s.files}
    budget = assembly.budget or 0
    rows = []
    for section in assembly.sections:
        rows.append({
            "section": section,
            "percent": round(100 * section.tokens / budget, 1) if budget else None,
        })
    context.update(assembly=assembly, rows=rows, at=at, file_ids=file_ids,
                   used_percent=round(100 * assembly.total_tokens / budget, 1) if budget else None)
    return render(request, "projects/simulate.html", context)


@login_required
def agent_settings(request, slug, agent_slug):
    """The manifest and the hook policy, each edited as rows (or as raw JSON), with a preview
    of the prompt an unsaved manifest would give a chosen person."""
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    agent = get_object_or_404(Agent, project=project, slug=agent_slug)
    members = list(Membership.objects.filter(project=project).select_related("user")
                   .order_by("user__username"))
    page = {"manifest": agent_forms.ManifestEditor(manifest=agent.manifest),
            "policy": agent_forms.PolicyEditor(policy=agent.hook_policy),
            "manifest_json": JsonSettingForm(prefix="manifest-json",
                                             initial={"value": agent.manifest}),
            "policy_json": JsonSettingForm(prefix="policy-json",
                                           initial={"value": agent.hook_policy})}
    status = 200
    preview = None
    if request.method == "POST" and request.POST.get("which") == "archive":
        archived = request.POST.get("archive") == "1"
        setup.archive_set(by=request.user, target=agent, archived=archived)
        messages.success(request, _("Archived %(name)s: it is hidden from lists and its pre hook "
                                    "is refused. Bring it back here at any time.")
                         % {"name": agent.name} if archived
                         else _("%(name)s is back.") % {"name": agent.name})
        return redirect("projects:agent_settings", slug=slug, agent_slug=agent_slug)
    if request.method == "POST":
        which = request.POST.get("which")
        if which not in page:
            raise Http404("No such setting.")
        if which.endswith("_json"):
            form = JsonSettingForm(request.POST, prefix=which.replace("_", "-"))
            page[which] = form
            value = form.cleaned_data["value"] if form.is_valid() else None
            page["open_json"] = which
        else:
            editor = (agent_forms.ManifestEditor if which == "manifest"
                      else agent_forms.PolicyEditor)(request.POST)
            page[which] = editor
            form = None
            value = None
            if editor.is_valid():
                value = editor.value()
        setting = which.removesuffix("_json")
        if value is not None and which == "manifest" and "preview" in request.POST:
            preview = _manifest_preview(request, agent, members, value)
        elif value is not None:
            try:
                agent_settings_update(agent=agent, by=request.user, **{setting: value})
            except ValidationError as exc:
                if form is None:
                    page[which].errors = exc.messages
                else:
                    form.add_error("value", exc)
            else:
                drafts.saved(request, which, agent.pk)
                messages.success(request, _("Saved the injection manifest.")
                                 if setting == "manifest" else _("Saved the hook policy."))
                if setting == "policy":
                    _refresh_credentials(request, agent)
                return redirect("projects:agent_settings", slug=slug, agent_slug=agent_slug)
        status = 200 if preview is not None else 400
    tokens = list(AgentToken.objects.filter(agent=agent).select_related("created_by"))
    live = {c.token_id: c for c in RunnerCredential.objects.filter(
        agent=agent, revoked_at__isnull=True)}
    for token in tokens:
        token.live_credential = live.get(token.pk)
    try:
        warnings = prompt_context.manifest_warnings(agent=agent, manifest=agent.manifest)
    except ValidationError:  # a manifest that no longer parses says so at the pre hook
        warnings = None
    return render(request, "projects/agent_settings.html", {
        "project": project, "role": role, "agent": agent, **page, "members": members,
        "manifest_warnings": warnings,
        "preview": preview, "sources": agent_forms.SOURCE_SUGGESTIONS,
        "tokens": tokens, "token_form": TokenForm(),
        "new_token": request.session.pop("new_token", None),
        "new_credentials": request.session.pop("new_credentials", None),
        "access": credentials.runner_access(agent),
    }, status=status)


def _manifest_preview(request, agent: Agent, members: list, manifest: dict) -> dict:
    """The prompt an unsaved manifest would give the chosen person, beside today's. No writes."""
    chosen = request.POST.get("preview_user", "")
    user = next((m.user for m in members if str(m.user_id) == chosen), None)
    if chosen and user is None:  # someone outside the project (or a forged id): not no one
        return {"error": _("Pick a member of this project, or no one."), "user": None}
    try:
        draft = prompt_context.build_context(agent=agent, user=user, manifest=manifest)
    except errors.StoreError as exc:
        return {"error": exc.message, "user": user}
    try:
        current = prompt_context.build_context(agent=agent, user=user)
    except (errors.StoreError, ValidationError):  # today's manifest no longer valid: no diff
        current = None
    warnings = {"overlaps": draft.overlaps,
                **{k: v for k, v in prompt_context.manifest_warnings(
                    agent=agent, manifest=manifest).items() if k == "logs"}}
    if current is None:
        return {"assembly": draft, "user": user, "current_tokens": None, "diff": None,
                "warnings": warnings}
    return {"assembly": draft, "user": user, "current_tokens": current.total_tokens,
            "diff": diff_texts(current.prompt, draft.prompt), "warnings": warnings}


def _refresh_credentials(request, agent: Agent) -> None:
    """Runners' S3 policies follow the hook policy (what they may replace directly); a direct
    rule they cannot get (a stricter rule overlaps it) is said where the rule was saved."""
    for rule in credentials.direct_write_rules(agent):
        if not rule.granted:
            messages.warning(request, _(
                "%(target)s allows a direct replace, but the stricter %(others)s governs some of "
                "the same files: runners' S3 credentials do not get %(target)s, so those "
                "changes go through the post hook.") % {
                "target": rule.target, "others": ", ".join(rule.left_out_for)})
    try:
        updated = credentials.credentials_refresh(agent=agent, by=request.user)
    except credentials.CredentialsUnavailable as exc:
        messages.error(request, _("The runners' S3 policies were not updated: %(error)s Save "
                                  "the hook policy again.") % {"error": exc.message})
    else:
        if updated:
            messages.info(request, ngettext(
                "Updated the S3 policy of %(count)d runner.",
                "Updated the S3 policies of %(count)d runners.", updated) % {"count": updated})


@login_required
@require_POST
def token_create(request, slug, agent_slug):
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    agent = get_object_or_404(Agent, project=project, slug=agent_slug)
    form = TokenForm(request.POST)
    if not form.is_valid():  # each field's own message (a name, or the expiry's range)
        if "name" in form.errors:
            messages.error(request, _("Give the token a name (up to 100 characters)."))
        for problem in form.errors.get("expires_in_days", []):
            messages.error(request, f"{form.fields['expires_in_days'].label}: {problem}")
    else:
        days = form.cleaned_data["expires_in_days"]
        _token, raw = bearer.token_create(
            agent=agent, name=form.cleaned_data["name"], created_by=request.user,
            expires_at=timezone.now() + dt.timedelta(days=days) if days else None)
        # Shown once, on the next page only; only its hash is stored.
        request.session["new_token"] = raw
    return redirect("projects:agent_settings", slug=slug, agent_slug=agent_slug)


def _managed_token(request, slug, agent_slug, token_id) -> AgentToken:
    project, role = permissions.project_or_404(request.user, slug)
    permissions.require(permissions.can_manage(role))
    return get_object_or_404(AgentToken.objects.select_related("agent", "agent__project"),
                             pk=token_id, agent__project=project, agent__slug=agent_slug)


@login_required
@require_POST
def token_revoke(request, slug, agent_slug, token_id):
    token = _managed_token(request, slug, agent_slug, token_id)
    try:
        bearer.token_revoke(token=token, by=request.user)
    except credentials.CredentialsUnavailable as exc:
        messages.error(request, _("Revoked %(token)s, but its S3 credentials are still live: "
                                  "%(error)s") % {"token": token, "error": exc.message})
    else:
        messages.success(request, _("Revoked %(token)s.") % {"token": token})
    return redirect("projects:agent_settings", slug=slug, agent_slug=agent_slug)


@login_required
@require_POST
def credentials_issue(request, slug, agent_slug, token_id):
    """S3 credentials of the token's own, confined to the project's prefix; shown once."""
    token = _managed_token(request, slug, agent_slug, token_id)
    try:
        credential, secret = credentials.credentials_issue(token=token, by=request.user)
    except (credentials.CredentialsUnavailable, ValidationError) as exc:
        messages.error(request, explain(exc))
    else:
        endpoint = settings.STORAGES["memory"]["OPTIONS"].get("endpoint_url") or ""
        # The runner's environment, as runnerkit's direct sandbox reads it.
        environment = "\n".join(f"{name}={value}" for name, value in (
            ("MGC_RUNNER_S3_ENDPOINT_URL", endpoint),
            ("MGC_RUNNER_S3_ACCESS_KEY_ID", credential.access_key_id),
            ("MGC_RUNNER_S3_SECRET_ACCESS_KEY", secret)))
        request.session["new_credentials"] = {
            "token": token.name, "environment": environment,
            "prefix": token.agent.project.prefix}
    return redirect("projects:agent_settings", slug=slug, agent_slug=agent_slug)


@login_required
@require_POST
def credentials_revoke(request, slug, agent_slug, token_id):
    token = _managed_token(request, slug, agent_slug, token_id)
    try:
        ended = credentials.credentials_revoke(token=token, by=request.user)
    except credentials.CredentialsUnavailable as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Deleted the S3 credentials of %(token)s.") % {"token": token}
                         if ended else _("%(token)s has no live S3 credentials.") % {"token": token})
    return redirect("projects:agent_settings", slug=slug, agent_slug=agent_slug)


@login_required
def session_list(request, slug):
    project, role = permissions.project_or_404(request.user, slug)
    sessions = AgentSession.objects.filter(agent__project=project).select_related("agent", "user")
    if not permissions.sees_everyone(role):
        sessions = sessions.filter(user=request.user)
    page = paging.page_of(sessions.order_by("-created_at"), paging.LIST, request)
    return render(request, "projects/session_list.html",
                  {"project": project, "role": role, "page": page})


@login_required
def session_detail(request, slug, session_id):
    """One session: the exact prompt its pre hook returned (from S3, checked against its
    sha256), tokens per file, the events, and a diff if re-assembling it now differs."""
    project, role = permissions.project_or_404(request.user, slug)
    session = get_object_or_404(AgentSession.objects.select_related("agent", "user"),
                                pk=session_id, agent__project=project)
    if not permissions.sees_everyone(role) and session.user_id != request.user.pk:
        raise Http404("No such session.")
    file_ids = {f["file_id"] for s in session.receipt for f in s["files"] if f.get("file_id")}
    known = set(str(pk) for pk in MemoryFile.objects.filter(pk__in=file_ids)
                .values_list("pk", flat=True))
    raw = permissions.sees_everyone(role)  # the runner's JSON is for admins and reviewers
    context = {"project": project, "role": role, "session": session, "known": known,
               "events": [(e, _event_lines(e),
                           json.dumps(e.payload, indent=2, ensure_ascii=False, sort_keys=True)
                           if raw else None)
                          for e in _events_of(session)],
               "at": session.created_at.strftime("%Y-%m-%dT%H:%M:%S.%f")}
    if session.prompt_removed:
        # Erased or expired on purpose: say who and why, instead of a receipt that fails its
        # check (re-assembling would only show what the erasure took out).
        removed = dict(session.prompt_removed)
        removed["when"] = parse_datetime(removed.get("at", "")) if removed.get("at") else None
        context["removed"], context["stored_prompt"] = removed, None
        audit_read(user=request.user, role=role, action="read.session", project=project,
                   obj=session)
        return render(request, "projects/session_detail.html", context)
    try:
        context["stored_prompt"] = receipts.prompt_read(project=project,
                                                        sha256=session.prompt_sha256)
        again = prompt_context.build_context(agent=session.agent, user=session.user,
                                             at=session.created_at)
    except errors.StoreError as exc:
        context["prompt_error"] = exc.message
    except ValidationError as exc:  # today's manifest no longer parses
        context["prompt_error"] = explain(exc)
    else:
        context["reassembled"] = again
        if context["stored_prompt"] is not None and again.sha256 != session.prompt_sha256:
            context["reassembly_diff"] = diff_texts(context["stored_prompt"], again.prompt)
    audit_read(user=request.user, role=role, action="read.session", project=project, obj=session)
    return render(request, "projects/session_detail.html", context)


def _events_of(session: AgentSession) -> list[SessionEvent]:
    """The session's events, the pre hook's first: kept on the session row itself since the
    hook writes one row (older sessions have it as an event of its own)."""
    events = list(session.events.all())
    if not any(e.kind == SessionEvent.Kind.PRE for e in events):
        events.insert(0, SessionEvent(session=session, kind=SessionEvent.Kind.PRE,
                                      created_at=session.created_at, payload={
                                          "total_tokens": session.total_tokens,
                                          "prompt_sha256": session.prompt_sha256,
                                          "bucket_checked": session.bucket_checked}))
    return events


def _event_lines(event) -> list[str]:
    """A hook's event as sentences a person reads (the JSON stays one click away for staff)."""
    payload = event.payload or {}
    if event.kind == "pre":
        lines = [ngettext("Assembled a prompt of %(count)s token.",
                          "Assembled a prompt of %(count)s tokens.",
                          payload.get("total_tokens") or 0)
                 % {"count": payload.get("total_tokens") or 0}]
        if payload.get("bucket_checked") is False:
            lines.append(_("Storage could not be listed: the prompt came from the console's "
                           "records."))
        return lines
    if event.kind == "tool":
        return [_("Tool %(name)s: %(summary)s") % {"name": payload.get("name", "?"),
                                                   "summary": payload.get("summary") or "–"}]
    if event.kind == "error":
        return [_("Error: %(message)s") % {"message": payload.get("message") or "–"}]
    lines = [_("Summary: %(summary)s") % {"summary": payload["summary"]}] \
        if payload.get("summary") else []
    for result in payload.get("results", []):
        status, path = result.get("status"), result.get("path", "?")
        if status == "written" and result.get("unchanged"):
            lines.append(_("%(path)s: unchanged") % {"path": path})
        elif status == "written":
            lines.append(_("%(path)s: written as revision %(number)s")
                         % {"path": path, "number": result.get("revision")})
        elif status == "proposed":
            lines.append(_("%(path)s: proposed, waiting for approval") % {"path": path})
        elif status == "conflict":
            lines.append(_("%(path)s: not written, the file had changed") % {"path": path})
        else:
            lines.append(_("%(path)s: refused (%(reason)s)")
                         % {"path": path, "reason": result.get("message", status)})
    return lines


@login_required
def proposal_list(request, slug):
    """Admins and compliance see every proposal; an employee sees those on their own USER.md
    and decides them (consent to what agents record about them)."""
    project, role = permissions.project_or_404(request.user, slug)
    status = request.GET.get("status", "pending")
    proposals = (Proposal.objects.filter(permissions.visible_proposals(request.user, role),
                                         project=project, status=status)
                 .select_related("file", "file__head", "file__agent", "file__user", "agent",
                                 "session", "decided_by", "revision").order_by("-created_at"))
    page = paging.page_of(proposals, paging.REVIEW, request)
    items = []
    for proposal in page:
        try:
            current = store.file_read(proposal.file).text if proposal.file.head else ""
        except errors.StoreError:
            current = ""
        after = {"append": appended(current, proposal.content), "delete": "",
                 "rename": current}.get(proposal.mode, proposal.content)
        proposal.can_decide = permissions.can_decide_proposal(request.user, role, proposal)
        proposal.session_visible = proposal.session_id is not None and (
            permissions.sees_everyone(role) or proposal.session.user_id == request.user.pk)
        items.append((proposal, diff_texts(current, after)))
    # One read per proposal shown (its diff quotes the file), not one per visit.
    audit_reads(user=request.user, role=role, action="read.proposals", project=project,
                reads=[(p, {"file": str(p.file_id)}) for p, _diff in items])
    return render(request, "projects/proposal_list.html", {
        "project": project, "role": role, "page": page, "items": items, "status": status})


@login_required
@require_POST
def proposal_decide(request, slug, proposal_id):
    project, role = permissions.project_or_404(request.user, slug)
    proposal = get_object_or_404(
        Proposal.objects.filter(permissions.visible_proposals(request.user, role))
        .select_related("file"), pk=proposal_id, project=project)
    permissions.require(permissions.can_decide_proposal(request.user, role, proposal))
    note = request.POST.get("note", "").replace("\x00", "\ufffd")[:500]  # storable anywhere
    decided = False
    try:
        if request.POST.get("decision") == "approve":
            revision = proposal_approve(proposal=proposal, by=request.user, note=note)
            if proposal.mode == "delete":
                messages.success(request, _("Approved: %(file)s is deleted (revision "
                                            "%(number)s); its history is kept.")
                                 % {"file": proposal.file, "number": revision.number})
            else:
                messages.success(request, _("Approved: %(file)s is now revision %(number)s.")
                                 % {"file": revision.file, "number": revision.number})
            decided = True
        elif request.POST.get("decision") == "reject":
            proposal_reject(proposal=proposal, by=request.user, note=note)
            messages.success(request, _("Rejected. Nothing was written."))
            decided = True
        else:
            messages.error(request, _("Choose approve or reject."))
    except HookError as exc:
        messages.error(request, exc.message)
    except errors.SaveConflict as exc:
        messages.error(request, _("The file changed since the agent proposed this change: "
                                  "%(summary)s Reject it, or ask the agent again.")
                       % {"summary": exc.summary})
    except errors.StoreError as exc:
        messages.error(request, exc.message)
    if decided:
        drafts.saved(request, "decide", proposal.pk)
    return redirect("projects:proposal_list", slug=slug)
