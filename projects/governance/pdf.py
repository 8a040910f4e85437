"""PDF from the console's own HTML (answers, destruction acts), by WeasyPrint: the same
template people read in a browser, laid out for A4. WeasyPrint draws text with Pango and the
fonts fontconfig finds; the templates ask for DejaVu Sans (Debian's fonts-dejavu-core), which
has Cyrillic. Nothing is fetched: the HTML carries its styles and links no other resource."""

from __future__ import annotations

import logging

# WeasyPrint reports each step of every render at INFO: the console's logs need none of it.
logging.getLogger("weasyprint.progress").setLevel(logging.WARNING)


def render(html: str) -> bytes:
    # Imported here: WeasyPrint loads Pango and its fonts, which no page of the console needs.
    from weasyprint import HTML

    return HTML(string=html, base_url=None, url_fetcher=_no_fetch).write_pdf()


def _no_fetch(url: str, *args, **kwargs):
    raise ValueError(f"the console's PDFs fetch nothing ({url})")
