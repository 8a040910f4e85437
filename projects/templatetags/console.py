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
from projects.memory import poisoning, refusals
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
    """'api_key' -> 'API key or token'; a poisoning family ('exfiltration') as poisoning names it."""
    return LABELS.get(kind) or poisoning.LABELS.get(kind, kind)


@register.filter
def poison_family(family: str) -> str:
    """'exfiltration' -> 'exfiltration' in the page's language (memory/poisoning.py)."""
    return str(poisoning.LABELS.get(family, family))


@register.filter
def shown_hidden(text: str) -> str:
    """Invisible characters named, tag characters spelled out (poisoning.visible); escaped
    by the template as any text."""
    return poisoning.visible(text or "")


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
        "hold": permissions.can_hold,
        "scan_memory": permissions.can_scan_memory,
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
    "username": _("username"),
    "ip_address": _("address"),
    "failures": _("failed attempts"),
    "minutes": _("minutes"),
    "records": _("records"),
    "mapping": _("group mapping"),
    "mapping_id": _("mapping"),
    "group": _("group"),
    "via": _("via"),
    "issuer": _("provider"),
    "subject": _("subject"),
    "covers": _("covers"),
    "case": _("case"),
    "kept": _("kept"),
    "removed": _("removed"),
    "over": _("over the limit"),
    "project": _("project"),
    "client": _("client"),
    "scope": _("scope"),
    "kind": _("kind"),
    "attempts": _("attempts"),
    "rate": _("rate limit"),
}

# Detail values that are the console's own words, stored as codes or in English (the record
# stays as written; the page reads it in the reader's language).
_ROLE_KEYS = {"role", "from", "to", "removed"}
_DETAIL_WORDS = {
    "via": {"single sign-on": _("single sign-on")},
    "reason": {
        "sso_turned_off": _("single sign-on was turned off"),
        "id_token_expired": _("the provider's sign-in expired"),
    },
    "kept": {"last_admin": _("the project's last admin")},
    "mapping": {"(deleted mapping)": _("(deleted mapping)")},
    "over": {"client": _("attempts from this address"), "path": _("attempts on this link")},
    # A sign-in lockout's client and scope, and what an unlock lifted (governance.signin, lockouts).
    "client": {"device": _("a browser that signed in before"), "address": _("address")},
}
_LOCKOUT_SCOPES = {
    "pair": _("one account from one client"),
    "address": _("every account from one address"),
    "account": _("one account from many places"),
}
_DETAIL_WORDS["scope"] = _LOCKOUT_SCOPES


def _detail_value(key: str, value) -> str:
    if isinstance(value, str):
        if key in _ROLE_KEYS:
            return system_text.word("role", value)
        if key == "covers":
            return system_text.hold_covers(value)
        if key == "mapping" and value not in _DETAIL_WORDS["mapping"]:
            return system_text.mapping_shown(value)
        if key == "kind":  # an unlock's scope, a subject request's or a webhook's kind
            return str(_LOCKOUT_SCOPES.get(value) or system_text.word("kind", value))
        return str(_DETAIL_WORDS.get(key, {}).get(value, value))
    if isinstance(value, bool):
        return str(_("yes") if value else _("no"))
    if isinstance(value, list):
        return ", ".join(_detail_value(key, v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{_DETAIL_NAMES.get(k, k)}={_detail_value(k, v)}" for k, v in value.items())
    if value is None:
        return "–"
    return str(value)


@register.filter
def readable_details(details) -> list[tuple[str, str]]:
    """An audit event's details as (name, value) pairs a person reads: known names in the
    page's language, lists joined, nested objects as name=value, hashes shortened."""
    if not isinstance(details, dict):
        return [("", str(details))] if details else []
    pairs = []
    for key, value in details.items():
        shown = _detail_value(key, value)
        if key in ("sha256", "prompt_sha256") and len(shown) > 12:
            shown = shown[:12] + "…"
        pairs.append((str(_DETAIL_NAMES.get(key, key)), shown[:200]))
    return pairs


@register.simple_tag(takes_context=True)
def origin_html(context, o: dict | None, file=None) -> str:
    """A line's origin (views.provenance.origin_view) as a page shows it (`origin_markup`); the
    page's words are translated once per render."""
    words = context.get("_origin_words")
    if words is None:
        words = context["_origin_words"] = origin_words()
    return origin_markup(o, file, words)


def origin_markup(o: dict | None, file, words: dict) -> str:
    """The revision (a link where the reader may open it), its author and kind, when, the
    session (a link where the reader may see it), held / text expired / may be older, the
    message and the last tool calls before the write. Built here, every part escaped, rather
    than by an included template: a blame page shows hundreds of origins, and an include costs
    a template render each."""
    if not o:
        return ""
    revision = o["revision"]
    if not revision.number:
        return SafeString(f'<span class="muted">{words["unknown"]}</span>')
    number = f"r{revision.number}"
    html = [f'<a href="{escape(o["revision_url"])}">{number}</a>' if o["revision_url"] else number]
    if o["file"] is not None and file is not None and o["file"].pk != file.pk:
        html.append(f' <span class="muted small">{escape(o["file"].source_path)}</span>')
    kind = revision.author_kind
    when = escape(dateformat.format(localtime(revision.created_at), words["when"]))
    html.append(
        f" · {escape(system_text.actor_shown(revision.author_label))}"
        f' <span class="badge author-{escape(kind)}">{words["kinds"].get(kind) or escape(kind)}</span>'
        f' · <span class="small">{when}</span>'
    )
    if o["session_ref"]:
        if o["session_url"]:
            label = words["session"] % {"ref": _short(o["session_ref"], 10)}
            html.append(f' · <a href="{escape(o["session_url"])}">{escape(label)}</a>')
        else:
            html.append(f' · <span class="muted small">{words["elsewhere"]}</span>')
    for flag, badge in (("held", "badge warn"), ("text_gone", "badge")):
        if o[flag]:
            html.append(f' <span class="{badge}">{words[flag]}</span>')
    if o["approximate"]:
        html.append(f' <span class="badge" title="{words["rough_why"]}">{words["rough"]}</span>')
    message = revision.display_message
    if message:
        html.append(f'<div class="muted small">“{escape(_short(message, 140))}”</div>')
    if o["tool_calls"]:
        calls = " · ".join(
            f"<code>{escape(_short(c.name, 60))}</code>"
            + (f' <span class="muted">({escape(_short(c.resource, 120))})</span>' if c.resource else "")
            for c in o["tool_calls"]
        )
        html.append(f'<div class="small tool-calls">{words["before"]} {calls}</div>')
    return SafeString("".join(html))  # every part above is escaped or the console's own markup


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def origin_words() -> dict:
    """The words origin_markup uses, in the active language."""
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
