"""An XSS corpus through the rendering pipeline, the live preview and the read view."""

import re

import pytest
from django.urls import reverse

from projects.audit import Actor
from projects.memory import store
from projects.models import Membership
from projects.rendering import render_markdown

pytestmark = pytest.mark.db_independent

PAYLOADS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    '<img src="javascript:alert(1)">',
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<body onload=alert(1)>",
    "<iframe src=javascript:alert(1)></iframe>",
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    '<a href="javascript:alert(1)">x</a>',
    '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href="jav&#x09;ascript:alert(1)">x</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    '<a href="vbscript:msgbox(1)">x</a>',
    "[click](javascript:alert(1))",
    "[click](JAVASCRIPT:alert(1))",
    "[click](data:text/html,<script>alert(1)</script>)",
    "![x](javascript:alert(1))",
    "![x](data:image/svg+xml,<svg onload=alert(1)>)",
    '<div style="background:url(javascript:alert(1))">x</div>',
    '<p style="position:fixed;top:0;left:0;width:100%;height:100%">overlay</p>',
    "<style>body{display:none}</style>",
    "<link rel=stylesheet href=//evil.example/x.css>",
    '<meta http-equiv=refresh content="0;url=javascript:alert(1)">',
    "<object data=javascript:alert(1)></object>",
    "<embed src=javascript:alert(1)>",
    "<form action=javascript:alert(1)><button>x</button></form>",
    "<input autofocus onfocus=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<video><source onerror=alert(1)></video>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<base href=javascript:alert(1)//>",
    "<a href=# onclick=alert(1)>x</a>",
    "<marquee onstart=alert(1)>x</marquee>",
    "<textarea><script>alert(1)</script></textarea>",
    "```html\n<script>alert(1)</script>\n```",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
]

# What must never appear in rendered HTML: an executable tag, an event handler attribute,
# a script-capable URL, inline style.
_DANGER = re.compile(
    r"<\s*(script|iframe|object|embed|style|link|meta|base|form|input|svg|math|body|video|"
    r"source|details|marquee|textarea|noscript)\b|\son\w+\s*=|"
    r"(href|src|action|formaction|xlink:href)\s*=\s*[\"']?\s*(javascript|vbscript|data):|"
    r"\sstyle\s*=|\ssrcdoc\s*=",
    re.IGNORECASE,
)


def test_corpus_is_large_enough():
    assert len(PAYLOADS) >= 30


@pytest.mark.parametrize("payload", PAYLOADS)
def test_rendering_removes_every_payload(payload):
    html = render_markdown(f"# Note\n\n{payload}\n")
    assert not _DANGER.search(html), html


def test_links_get_nofollow_noopener():
    html = render_markdown("[site](https://example.com)")
    assert 'rel="nofollow noopener"' in html and 'href="https://example.com"' in html


@pytest.mark.django_db
def test_preview_and_read_view_remove_every_payload(client, s3, project, make_user):
    admin = make_user()
    Membership.objects.create(user=admin, project=project, role="admin")
    client.force_login(admin)
    text = "\n\n".join(PAYLOADS)
    preview = client.post(reverse("projects:preview"), {"content": text}).json()["html"]
    assert not _DANGER.search(preview), preview
    revision = store.file_create(
        project=project, scope="workspace", path="xss.md", content=text, actor=Actor.person(admin)
    )
    page = client.get(reverse("projects:file_detail", args=[project.slug, revision.file_id]))
    article = page.content.decode().split('<article class="markdown">', 1)[1].split("</article>")[0]
    assert not _DANGER.search(article), article
    raw = client.get(
        reverse("projects:revision_detail", args=[project.slug, revision.file_id, 1]) + "?view=raw"
    )
    body = raw.content.decode().split('<pre class="raw">', 1)[1].split("</pre>")[0]
    assert "<script" not in body and "&lt;script&gt;" in body


def test_the_corpus_is_dangerous_without_the_sanitizer():
    # Guards the guard: rendered by markdown alone, the payloads do trip the detector.
    import markdown

    tripped = [
        p for p in PAYLOADS if _DANGER.search(markdown.markdown(p, extensions=["tables", "fenced_code"]))
    ]
    assert len(tripped) >= 30


def test_task_lists_render_as_drawn_boxes_and_no_input_ever_reaches_a_page():
    from projects.rendering import render_markdown

    html = render_markdown("- [x] done\n- [ ] todo\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert '<ul class="task-list">' in html and '<li class="task-list-item">' in html
    assert '<span class="task-box done" role="img" aria-label="done"></span>' in html
    assert '<span class="task-box" role="img" aria-label="to do"></span>' in html
    assert "<table>" in html and "<input" not in html
    hostile = render_markdown(
        '<input type="checkbox" disabled checked>'
        '<span class="evil" role="button" onclick="a()">x</span>'
        '<ul class="evil"><li class="x">i</li></ul>'
    )
    assert "<input" not in hostile and "onclick" not in hostile and "evil" not in hostile
    assert 'role="button"' not in hostile and 'class="x"' not in hostile
