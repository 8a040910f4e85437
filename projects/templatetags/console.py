import json
from urllib.parse import urlsplit

from django import template
from django.core.exceptions import DisallowedHost
from django.utils.translation import gettext_lazy as _

from projects import audit
from projects.governance import isolation, permissions
from projects.memory.scanning import LABELS
from projects.models import Membership

register = template.Library()


@register.simple_tag(takes_context=True)
def page_query(context, number) -> str:
    """The current query string with `page` replaced, so pagination keeps filters."""
    query = context["request"].GET.copy()
    query["page"] = number
    return "?" + query.urlencode()


@register.simple_tag(takes_context=True)
def back_here(context) -> str:
    """Where the language switch returns to: this page, or, for a page answering a POST (a
    refused form, a token shown once), the page that form was on: its URL may take POST only."""
    request = context.get("request")
    if request is None:  # the 500 page is drawn without a request
        return "/"
    if request.method in ("GET", "HEAD"):
        return request.get_full_path()
    referer = urlsplit(request.META.get("HTTP_REFERER", ""))
    try:
        host = request.get_host()
    except DisallowedHost:  # the 400 page for a forged Host header draws this too
        return "/"
    if referer.netloc == host and referer.path.startswith("/"):
        return referer.path + (f"?{referer.query}" if referer.query else "")
    return "/"


@register.filter
def opens_source_file(role: str | None, path: str) -> bool:
    """`{% if role|opens_source_file:f.path %}`: may this role open a prompt's source file?
    Workspace files are the team's (not an employee's); agent files and a profile shown in a
    prompt the role may simulate are readable."""
    return permissions.can_see_workspace(role) or not path.startswith("workspace/")


@register.filter
def finding_label(kind: str) -> str:
    """'api_key' -> 'API key or token'."""
    return LABELS.get(kind, kind)


@register.filter
def role_label(role: str | None) -> str:
    """'compliance' -> 'Compliance' in the page's language."""
    try:
        return str(Membership.Role(role).label)
    except ValueError:
        return role or ""


@register.filter
def action_label(action: str) -> str:
    """'file.save' -> 'saved a file' in the page's language."""
    return str(audit.ACTIONS.get(action, ""))


@register.filter
def isolation_kind_label(kind: str) -> str:
    """'missing_object' -> 'record without its object' in the page's language."""
    return str(isolation.KIND_LABELS.get(kind, kind))


@register.filter
def write_mode_label(mode: str) -> str:
    """A proposal's 'append', 'replace', 'delete' or 'rename', as words of the page's
    language."""
    return str({"append": _("append"), "replace": _("replace"), "delete": _("delete"),
                "rename": _("rename")}.get(mode, mode))


@register.filter
def can(role: str | None, capability: str) -> bool:
    """`{% if role|can:"manage" %}`: templates ask permissions.py, never compare roles."""
    checks = {"manage": permissions.can_manage, "review": permissions.can_review,
              "see_everyone": permissions.sees_everyone,
              "see_workspace": permissions.can_see_workspace}
    return checks[capability](role)


@register.filter
def json_line(value) -> str:
    """A JSON value on one line, for details columns (escaped by the template as usual)."""
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True) if value else ""
