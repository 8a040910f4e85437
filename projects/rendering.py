"""Text made HTML: Markdown -> sanitized HTML, the one pipeline for every read view and the
live preview; and search excerpts with their matches marked.

nh3 (Ammonia) is the sanitizer, not bleach: bleach's README has said since 2026-06-05 that it
is no longer maintained, with no releases even for security issues. nh3 cleans against a
safelist, so anything not listed below (script, style, event handlers, javascript:/data: URLs)
is dropped.
"""

import markdown
import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from projects.memory.content import within_limit

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table",
    "tbody", "td", "th", "thead", "tr", "ul",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},
}
_URL_SCHEMES = {"http", "https", "mailto"}


def sanitize_html(html: str) -> str:
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_URL_SCHEMES,
                     link_rel="nofollow noopener")


def render_markdown(text: str) -> str:
    """Render a memory file for people, marked safe: nh3 has cleaned it, so templates must not
    escape it again (escaped, the preview would show tags as text). At most a memory file's
    worth of text is rendered; the rest is left out, and the page says so."""
    text, cut = within_limit(text)
    html = markdown.markdown(text, extensions=["tables", "fenced_code"], output_format="html")
    if cut:
        html += "<p><em>" + escape(_("The rest is not shown: this text is larger than a memory "
                                     "file may be.")) + "</em></p>"
    return mark_safe(sanitize_html(html))  # noqa: S308 - sanitized by nh3 just above


def highlighted(segments: list[tuple[str, bool]]) -> SafeString:
    """A search excerpt (memory.search.excerpt) as HTML: every piece escaped, matches in
    <mark>."""
    return mark_safe("".join(  # noqa: S308 - every piece is escaped here
        f"<mark>{escape(piece)}</mark>" if match else escape(piece) for piece, match in segments))
