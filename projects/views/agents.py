"""An agent's settings (admins): the injection manifest and the hook policy, each edited as
rows or as raw JSON, a preview of the prompt an unsaved manifest gives, archiving, and the
runners' S3 policies kept in step with the hook policy. Its tokens are views/tokens.py."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from projects import agent_forms, drafts
from projects.forms.setup import JsonSettingForm, TokenForm
from projects.governance import permissions, setup
from projects.memory import errors
from projects.memory.diffing import diff_texts
from projects.memory.health import prompts as prompt_health
from projects.models import Agent, AgentToken, Membership, RunnerCredential
from projects.runners import agent_settings, credentials, policy
from projects.runners import context as prompt_context
from projects.views.base import project_view


@project_view(capability=permissions.can_manage)
def agent_settings_view(request, project, role, agent_slug):
    """The manifest and the hook policy, each edited as rows (or as raw JSON), with a preview
    of the prompt an unsaved manifest would give a chosen person."""
    agent = get_object_or_404(Agent, project=project, slug=agent_slug)
    members = list(
        Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    )
    page = {
        "manifest": agent_forms.ManifestEditor(manifest=agent.manifest),
        "policy": agent_forms.PolicyEditor(policy=agent.hook_policy),
        "manifest_json": JsonSettingForm(prefix="manifest-json", initial={"value": agent.manifest}),
        "policy_json": JsonSettingForm(prefix="policy-json", initial={"value": agent.hook_policy}),
    }
    status = 200
    preview = None
    if request.method == "POST" and request.POST.get("which") == "archive":
        archived = request.POST.get("archive") == "1"
        setup.archive_set(by=request.user, target=agent, archived=archived)
        messages.success(
            request,
            _(
                "Archived %(name)s: it is hidden from lists and its pre hook "
                "is refused. Bring it back here at any time."
            )
            % {"name": agent.name}
            if archived
            else _("%(name)s is back.") % {"name": agent.name},
        )
        return redirect("projects:agent_settings", slug=project.slug, agent_slug=agent_slug)
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
            editor = (agent_forms.ManifestEditor if which == "manifest" else agent_forms.PolicyEditor)(
                request.POST
            )
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
                agent_settings.agent_settings_update(agent=agent, by=request.user, **{setting: value})
            except ValidationError as exc:
                if form is None:
                    page[which].errors = exc.messages
                else:
                    form.add_error("value", exc)
            else:
                drafts.saved(request, which, agent.pk)
                messages.success(
                    request,
                    _("Saved the injection manifest.")
                    if setting == "manifest"
                    else _("Saved the hook policy."),
                )
                if setting == "policy":
                    _refresh_credentials(request, agent)
                return redirect("projects:agent_settings", slug=project.slug, agent_slug=agent_slug)
        status = 200 if preview is not None else 400
    tokens = list(AgentToken.objects.filter(agent=agent).select_related("created_by"))
    live = {c.token_id: c for c in RunnerCredential.objects.filter(agent=agent, revoked_at__isnull=True)}
    for token in tokens:
        token.live_credential = live.get(token.pk)
    try:
        warnings = prompt_context.manifest_warnings(agent=agent, manifest=agent.manifest)
    except ValidationError:  # a manifest that no longer parses says so at the pre hook
        warnings = None
    return render(
        request,
        "projects/agent_settings.html",
        {
            "project": project,
            "role": role,
            "agent": agent,
            **page,
            "members": members,
            "manifest_warnings": warnings,
            "preview": preview,
            "sources": agent_forms.SOURCE_SUGGESTIONS,
            "tokens": tokens,
            "token_form": TokenForm(),
            "new_token": request.session.pop("new_token", None),
            "new_credentials": request.session.pop("new_credentials", None),
            "access": credentials.runner_access(agent),
            "log_rewrites": [
                (path, [str(_WAYS[way]) for way in ways]) for path, ways in policy.log_rewrites(agent)
            ],
            "stale_credentials": credentials.stale_credentials(agent),
            "cache": prompt_health.cache_figures(agent, now=timezone.now()),
        },
        status=status,
    )


# What a rule may let an agent do to its log besides appending, in the reader's language.
_WAYS = {
    "replace": gettext_lazy("replace"),
    "delete": gettext_lazy("delete"),
    "rename": gettext_lazy("rename"),
}


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
    warnings = {
        "overlaps": draft.overlaps,
        **{
            k: v
            for k, v in prompt_context.manifest_warnings(agent=agent, manifest=manifest).items()
            if k == "logs"
        },
    }
    order = [s.get("tag") for s in manifest.get("sections", []) if isinstance(s, dict)]
    cache = prompt_health.cache_figures(agent, now=timezone.now(), order=order)
    if current is None:
        return {
            "assembly": draft,
            "user": user,
            "current_tokens": None,
            "diff": None,
            "warnings": warnings,
            "cache": cache,
        }
    return {
        "cache": cache,
        "assembly": draft,
        "user": user,
        "current_tokens": current.total_tokens,
        "diff": diff_texts(current.prompt, draft.prompt),
        "warnings": warnings,
    }


def _refresh_credentials(request, agent: Agent) -> None:
    """Runners' S3 policies follow the hook policy (what they may replace directly)."""
    try:
        updated = credentials.credentials_refresh(agent=agent, by=request.user)
    except credentials.CredentialsUnavailable as exc:
        messages.error(
            request,
            _("The runners' S3 policies were not updated: %(error)s Save the hook policy again.")
            % {"error": exc.message},
        )
    else:
        if updated:
            messages.info(
                request,
                ngettext(
                    "Updated the S3 policy of %(count)d runner.",
                    "Updated the S3 policies of %(count)d runners.",
                    updated,
                )
                % {"count": updated},
            )
