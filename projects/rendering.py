"""Text made HTML: Markdown -> sanitized HTML, the one pipeline for every read view and the
live preview; and search excerpts with their matches marked.

nh3 (Ammonia) is the sanitizer, not bleach: bleach's README has said since 2026-06-05 that it
is no longer maintained, with no releases even for security issues. nh3 cleans against a
safelist, so anything not listed below (script, style, event handlers, javascript:/data: URLs)
is dropped.
"""

import re

import markdown
import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from projects.memory.content import within_limit

_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "del",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},
    "ul": {"class"},
    "li": {"class"},
    "span": {"class", "role", "aria-label"},  # a task's box (below)
}
_URL_SCHEMES = {"http", "https", "mailto"}
# Task lists ("- [x] done") by pymdown-extensions' tasklist. Its checkboxes become drawn boxes
# (a span with a role and a name), so no <input> ever reaches a page, typed or generated.
_EXTENSIONS = ["tables", "fenced_code", "pymdownx.tasklist"]
_EXTENSION_CONFIGS = {"pymdownx.tasklist": {"custom_checkbox": False, "clickable_checkbox": False}}
_CHECKBOX = re.compile(r'<input type="checkbox" disabled( checked)?\s*/?>')
_VALUES = {
    ("ul", "class"): {"task-list"},
    ("li", "class"): {"task-list-item"},
    ("span", "class"): {"task-box", "task-box done"},
    ("span", "role"): {"img"},
}


def _allowed_value(tag: str, attribute: str, value: str) -> str | None:
    """Classes and roles only as the task list writes them."""
    allowed = _VALUES.get((tag, attribute))
    return value if allowed is None or value in allowed else None


def sanitize_html(html: str) -> str:
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="nofollow noopener",
        attribute_filter=_allowed_value,
    )


def _task_box(match: re.Match) -> str:
    done = bool(match.group(1))
    label = escape(_("done") if done else _("to do"))
    return f'<span class="task-box{" done" if done else ""}" role="img" aria-label="{label}"></span>'


def render_markdown(text: str) -> str:
    """Render a memory file for people, marked safe: nh3 has cleaned it, so templates must not
    escape it again (escaped, the preview would show tags as text). At most a memory file's
    worth of text is rendered; the rest is left out, and the page says so."""
    text, cut = within_limit(text)
    html = markdown.markdown(
        text, extensions=_EXTENSIONS, extension_configs=_EXTENSION_CONFIGS, output_format="html"
    )
    html = _CHECKBOX.sub(_task_box, html)  # a typed <input> is dropped by nh3 like any other
    if cut:
        html += (
            "<p><em>"
            + escape(_("The rest is not shown: this text is larger than a memory file may be."))
            + "</em></p>"
        )
    return mark_safe(sanitize_html(html))  # noqa: S308 - sanitized by nh3 just above


def highlighted(segments: list[tuple[str, bool]]) -> SafeString:
    """A search excerpt (memory.search.excerpt) as HTML: every piece escaped, matches in
    <mark>."""
    return mark_safe(  # noqa: S308 - every piece is escaped here
        "".join(f"<mark>{escape(piece)}</mark>" if match else escape(piece) for piece, match in segments)
    )
