"""A runner's bearer tokens and its S3 credentials (admins): create, revoke, issue, delete.
A secret is shown once, on the agent's settings page, and only its hash is kept."""

import datetime as dt

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.errors import explain
from projects.forms.setup import TokenForm
from projects.governance import permissions
from projects.models import Agent, AgentToken
from projects.runners import bearer, credentials
from projects.views.base import project_view


@project_view(capability=permissions.can_manage, methods=("POST",))
def token_create_view(request, project, role, agent_slug):
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
            agent=agent,
            name=form.cleaned_data["name"],
            created_by=request.user,
            expires_at=timezone.now() + dt.timedelta(days=days) if days else None,
        )
        # Shown once, on the next page only; only its hash is stored.
        request.session["new_token"] = raw
    return redirect("projects:agent_settings", slug=project.slug, agent_slug=agent_slug)


def _token_of(project, agent_slug, token_id) -> AgentToken:
    return get_object_or_404(
        AgentToken.objects.select_related("agent", "agent__project"),
        pk=token_id,
        agent__project=project,
        agent__slug=agent_slug,
    )


@project_view(capability=permissions.can_manage, methods=("POST",))
def token_revoke_view(request, project, role, agent_slug, token_id):
    token = _token_of(project, agent_slug, token_id)
    try:
        bearer.token_revoke(token=token, by=request.user)
    except credentials.CredentialsUnavailable as exc:
        messages.error(
            request,
            _("Revoked %(token)s, but its S3 credentials are still live: %(error)s")
            % {"token": token, "error": exc.message},
        )
    else:
        messages.success(request, _("Revoked %(token)s.") % {"token": token})
    return redirect("projects:agent_settings", slug=project.slug, agent_slug=agent_slug)


@project_view(capability=permissions.can_manage, methods=("POST",), refused_to="projects:agent_settings")
def credentials_issue_view(request, project, role, agent_slug, token_id):
    """S3 credentials of the token's own, confined to the project's prefix; shown once."""
    token = _token_of(project, agent_slug, token_id)
    try:
        credential, secret = credentials.credentials_issue(token=token, by=request.user)
    except ValidationError as exc:
        messages.error(request, explain(exc))
    else:
        endpoint = settings.STORAGES["memory"]["OPTIONS"].get("endpoint_url") or ""
        # The runner's environment, as runnerkit's direct sandbox reads it.
        environment = "\n".join(
            f"{name}={value}"
            for name, value in (
                ("MGC_RUNNER_S3_ENDPOINT_URL", endpoint),
                ("MGC_RUNNER_S3_ACCESS_KEY_ID", credential.access_key_id),
                ("MGC_RUNNER_S3_SECRET_ACCESS_KEY", secret),
            )
        )
        request.session["new_credentials"] = {
            "token": token.name,
            "environment": environment,
            "prefix": token.agent.project.prefix,
        }
    return redirect("projects:agent_settings", slug=project.slug, agent_slug=agent_slug)


@project_view(capability=permissions.can_manage, methods=("POST",), refused_to="projects:agent_settings")
def credentials_revoke_view(request, project, role, agent_slug, token_id):
    token = _token_of(project, agent_slug, token_id)
    ended = credentials.credentials_revoke(token=token, by=request.user)
    messages.success(
        request,
        _("Deleted the S3 credentials of %(token)s.") % {"token": token}
        if ended
        else _("%(token)s has no live S3 credentials.") % {"token": token},
    )
    return redirect("projects:agent_settings", slug=project.slug, agent_slug=agent_slug)
