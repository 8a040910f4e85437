import json
from urllib.parse import urlsplit

from django import template
from django.core.exceptions import DisallowedHost
from django.utils import dateformat
from django.utils.formats import get_format
from django.utils.html import escape
from django.utils.safestring import SafeString
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from projects import audit, drafts, system_text
from projects.governance import isolation, permissions
from projects.memory import refusals
from projects.memory.scanning import LABELS
from projects.models import Membership, Revision

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
    return str(
        {"append": _("append"), "replace": _("replace"), "delete": _("delete"), "rename": _("rename")}.get(
            mode, mode
        )
    )


@register.filter
def can(role: str | None, capability: str) -> bool:
    """`{% if role|can:"manage" %}`: templates ask permissions.py, never compare roles."""
    checks = {
        "manage": permissions.can_manage,
        "review": permissions.can_review,
        "see_everyone": permissions.sees_everyone,
        "see_workspace": permissions.can_see_workspace,
    }
    return checks[capability](role)


@register.filter
def json_line(value) -> str:
    """A JSON value on one line, for details columns (escaped by the template as usual)."""
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True) if value else ""


@register.filter
def refused_reason(refused) -> str:
    """Why the console refused a write it found in storage, in the reader's language."""
    return refusals.explain(refused)


@register.simple_tag
def draft_key(kind: str, *parts) -> str:
    """`<form data-draft="{% draft_key 'edit' file.pk %}">`: the name of the form's draft in
    the browser (projects/drafts.py; the view calls drafts.saved with the same parts)."""
    return drafts.key(kind, *parts)


@register.simple_tag(takes_context=True)
def drafts_saved(context) -> str:
    """The drafts the server has taken since the last page, as a JSON list for <body>."""
    request = context.get("request")
    return json.dumps(drafts.take_saved(request) if request is not None else [])


# The names of the audit details people meet most, in the page's language.
_DETAIL_NAMES = {
    "revision": _("revision"),
    "sha256": "sha256",
    "size": _("size"),
    "message": _("message"),
    "from": _("from"),
    "to": _("to"),
    "user": _("person"),
    "role": _("role"),
    "note": _("note"),
    "path": _("path"),
    "mode": _("mode"),
    "changed": _("changed"),
    "findings": _("found"),
    "comment": _("comment"),
    "reply": _("answer"),
    "flag": _("flag"),
    "query": _("query"),
    "results": _("results"),
    "history": _("history"),
    "format": _("format"),
    "filters": _("filters"),
    "reason": _("reason"),
    "slug": _("slug"),
    "name": _("name"),
    "file": _("file"),
    "email_given": _("e-mail given"),
    "since": _("since"),
}


@register.filter
def readable_details(details) -> list[tuple[str, str]]:
    """An audit event's details as (name, value) pairs a person reads: known names in the
    page's language, lists joined, nested objects as name=value, hashes shortened."""
    if not isinstance(details, dict):
        return [("", str(details))] if details else []
    pairs = []
    for key, value in details.items():
        if isinstance(value, bool):
            shown = str(_("yes") if value else _("no"))
        elif isinstance(value, list):
            shown = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        elif value is None:
            shown = "–"
        else:
            shown = str(value)
        if key in ("sha256", "prompt_sha256") and len(shown) > 12:
            shown = shown[:12] + "…"
        pairs.append((str(_DETAIL_NAMES.get(key, key)), shown[:200]))
    return pairs


@register.simple_tag(takes_context=True)
def origin_html(context, o: dict | None, file=None) -> str:
    """A line's origin (views.provenance.origin_view) as a page shows it: the revision (a link
    where the reader may open it), its author and kind, when, the session (a link where the
    reader may see it), held / text expired / may be older, the message and the last tool
    calls before the write. Built here, every part escaped, rather than by an included
    template: a blame page shows hundreds of origins, and an include costs a render each; the
    page's words are translated once (`_origin_words`)."""
    if not o:
        return ""
    words = context.get("_origin_words")
    if words is None:
        words = context["_origin_words"] = _origin_words()
    revision = o["revision"]
    if not revision.number:
        return SafeString(f'<span class="muted">{escape(words["unknown"])}</span>')
    number = f"r{revision.number}"
    html = [f'<a href="{escape(o["revision_url"])}">{number}</a>' if o["revision_url"] else number]
    if o["file"] is not None and file is not None and o["file"].pk != file.pk:
        html.append(f' <span class="muted small">{escape(o["file"].source_path)}</span>')
    kind = revision.author_kind
    html.append(
        f" · {escape(system_text.actor_shown(revision.author_label))}"
        f' <span class="badge author-{escape(kind)}">{escape(words["kinds"].get(kind, kind))}</span>'
        f' · <span class="small">{dateformat.format(localtime(revision.created_at), words["when"])}</span>'
    )
    if o["session_ref"]:
        if o["session_url"]:
            label = words["session"] % {"ref": _short(o["session_ref"], 10)}
            html.append(f' · <a href="{escape(o["session_url"])}">{escape(label)}</a>')
        else:
            html.append(f' · <span class="muted small">{escape(words["elsewhere"])}</span>')
    for flag, badge in (("held", "badge warn"), ("text_gone", "badge")):
        if o[flag]:
            html.append(f' <span class="{badge}">{escape(words[flag])}</span>')
    if o["approximate"]:
        html.append(
            f' <span class="badge" title="{escape(words["rough_why"])}">{escape(words["rough"])}</span>'
        )
    message = revision.display_message
    if message:
        html.append(f'<div class="muted small">“{escape(_short(message, 140))}”</div>')
    if o["tool_calls"]:
        calls = " · ".join(
            f"<code>{escape(_short(c.name, 60))}</code>"
            + (f' <span class="muted">({escape(_short(c.resource, 120))})</span>' if c.resource else "")
            for c in o["tool_calls"]
        )
        html.append(f'<div class="small tool-calls">{escape(words["before"])} {calls}</div>')
    return SafeString("".join(html))  # every part above is escaped or the console's own markup


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _origin_words() -> dict:
    return {
        "unknown": gettext("unknown: the revision is gone"),
        "kinds": {kind: str(label) for kind, label in Revision.AuthorKind.choices},
        "when": get_format("SHORT_DATETIME_FORMAT"),
        "session": gettext("session %(ref)s"),
        "elsewhere": gettext("in an agent session"),
        "held": gettext("held"),
        "text_gone": gettext("text expired"),
        "rough": gettext("may be older"),
        "rough_why": gettext(
            "Worked out after the texts of earlier revisions were deleted: the line may be older."
        ),
        "before": gettext("Before the write:"),
    }
