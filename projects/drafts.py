"""Drafts: what a person types into a console form is kept in their browser (localStorage,
static/js/drafts.js) until the server has taken it, so a session that ended, a CSRF token that
expired or a failed save (S3 down, a conflict) never loses it: the page offers it back.

Each form names its draft with `{% draft_key kind part... %}` (the script adds the user's id
in front); a view that has taken a form's text calls `drafts.saved(request, kind, part...)`,
and the next page the person sees tells the script to forget that draft (`{% drafts_saved %}`
on <body>). A failed save never calls it, so the draft stays until the text is saved."""

from __future__ import annotations

SESSION_KEY = "mgc_drafts_saved"
_KEEP = 20  # keys waiting for the next page; a person saves one form at a time


def key(kind: str, *parts: object) -> str:
    """The draft's name, the same in the template and in the view: 'edit:<file id>'."""
    return ":".join([kind, *(str(part) for part in parts)])


def saved(request, kind: str, *parts: object) -> None:
    """The form's text is stored, or the person settled it another way (chose to keep things
    as they are): the next page tells the browser to drop its draft, so no banner calls the
    text lost."""
    waiting = list(request.session.get(SESSION_KEY, []))
    name = key(kind, *parts)
    if name not in waiting:
        request.session[SESSION_KEY] = (waiting + [name])[-_KEEP:]


def take_saved(request) -> list[str]:
    """The drafts to drop, once: the page that shows them to the script empties the list."""
    session = getattr(request, "session", None)
    if session is None or SESSION_KEY not in session:
        return []
    return session.pop(SESSION_KEY)
