"""What a memory file's content may be: UTF-8 Markdown text without NUL, within the size limit.
One place for the check the store, the editor and the runner API all rely on."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from projects.memory.errors import ContentRejected


def _binary() -> ContentRejected:
    return ContentRejected(
        _("The content contains NUL bytes: it looks like a binary file, and memory files are Markdown text.")
    )


def encode(content: str | bytes) -> bytes:
    """UTF-8 bytes of a memory file's text, or ContentRejected saying why not."""
    if isinstance(content, bytes):
        if b"\x00" in content:
            raise _binary()
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ContentRejected(
                _(
                    "The content is not UTF-8 text (invalid byte at position %(position)s). "
                    "Memory files are UTF-8 Markdown."
                )
                % {"position": exc.start}
            ) from None
        data = content
    elif isinstance(content, str):
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise ContentRejected(_("The content contains characters that are not valid text.")) from None
    else:
        raise ContentRejected(_("The content must be text."))
    if b"\x00" in data:
        raise _binary()
    limit = settings.MGC_MAX_FILE_BYTES
    if len(data) > limit:
        raise ContentRejected(
            _(
                "The content is %(size)s bytes; the limit is %(limit)s bytes (%(kib)s KiB). "
                "Split it into smaller files."
            )
            % {
                "size": number_format(len(data), force_grouping=True),
                "limit": number_format(limit, force_grouping=True),
                "kib": limit // 1024,
            }
        )
    return data


def from_textarea(text: str) -> str:
    """Browsers send CRLF from a textarea; memory files use LF like the rest of the bucket."""
    return text.replace("\r\n", "\n")


def decode(data: bytes) -> str:
    # Content the console wrote is valid UTF-8; an external write may not be. Show it anyway.
    return data.decode("utf-8", errors="replace")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def appended(text: str, addition: str) -> str:
    """`addition` added at the end of `text`, on a line of its own."""
    return text + ("" if not text or text.endswith("\n") else "\n") + addition


def within_limit(text: str) -> tuple[str, bool]:
    """At most a memory file's worth of `text` (MGC_MAX_FILE_BYTES of UTF-8), and whether it
    was cut: what a page renders or diffs, so a file larger than a save allows (adopted
    before adoption refused them) never makes a page of tens of megabytes."""
    limit = settings.MGC_MAX_FILE_BYTES
    if len(text) <= limit // 4:  # four bytes per character at most: surely within
        return text, False
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True
