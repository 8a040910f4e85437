"""The answer's PDF renders as text (pdftotext reads it back), in Russian and in English, with
Cyrillic drawn from a font that has it. One render per language for the whole module."""

import datetime as dt
import shutil
import subprocess

import pytest
from django.template.loader import render_to_string
from django.utils import timezone, translation

from projects.governance import pdf
from projects.models import SubjectRequest

pytestmark = pytest.mark.db_independent

PROFILE = "# Профиль: Иван Петров\n\n- Роль: руководитель дежурной смены.\n- Часовой пояс: Europe/Moscow.\n"


def _answer(language: str) -> tuple[dict, SubjectRequest]:
    request = SubjectRequest(
        pk=42,
        kind="access",
        law="both",
        language=language,
        received_at=timezone.make_aware(dt.datetime(2026, 1, 31, 10, 0)),
        due_on=dt.date(2026, 2, 13),
    )
    answer = {
        "language": language,
        "operator": "ООО «Пример»",
        "generated_at": "2026-02-02T10:00:00+00:00",
        "request": {"id": 42},
        "subject": {"username": "ivan.petrov", "name": "Иван Петров", "email": "ivan@example.com"},
        "projects": [{"slug": "tenders", "name": "Подготовка тендеров"}],
        "profiles": [
            {
                "project": "tenders",
                "path": "users/ivan.petrov/USER.md",
                "file": "memory/tenders/USER.md",
                "revisions": [
                    {
                        "number": 1,
                        "created_at": "2026-01-10T09:00:00+00:00",
                        "author": "ivan.petrov",
                        "message": "Первая версия",
                        "file": "memory/tenders/history/USER.md/r1.md",
                        "deletion": False,
                    }
                ],
            }
        ],
        "proposals": [],
        "consent": {"decisions": [], "withdrawals": []},
        "flags": [],
        "sessions": [],
        "audit": [
            {
                "seq": 7,
                "at": "2026-01-10T09:00:00",
                "actor": "ivan.petrov",
                "action": "file.save",
                "object": "USER.md",
            }
        ],
        "mentions": [
            {
                "project": "tenders",
                "path": "workspace/tenders/contacts.md",
                "revision": 2,
                "line": 3,
                "text": "Вопросы — Ивану Петрову.",
                "origin": {"author": "agent:tender-assistant", "revision": 2, "at": "2026-01-11"},
            }
        ],
        "withheld": {"name": 1, "email": 0, "phone": 0},
    }
    return answer, request


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    """Each language's answer rendered to PDF once, and read back as text."""
    assert shutil.which("pdftotext"), "poppler-utils is missing (.ci/run installs it)"
    texts = {}
    for language in ("ru", "en"):
        answer, request = _answer(language)
        with translation.override(language):
            html = render_to_string(
                "projects/subject/answer.html",
                {
                    "answer": answer,
                    "request": request,
                    "profile_texts": [("tenders: users/ivan.petrov/USER.md", PROFILE)],
                    "project_names": "Подготовка тендеров",
                    "generated": timezone.now(),
                },
            )
        data = pdf.render(html)
        assert data.startswith(b"%PDF-")
        text = subprocess.run(["pdftotext", "-", "-"], input=data, capture_output=True, check=True).stdout
        texts[language] = " ".join(text.decode().split())  # lines wrap where the layout says
    return texts


def test_the_russian_answer_reads_in_russian_with_cyrillic_glyphs(rendered):
    text = rendered["ru"]
    assert "Что мы храним о вас" in text
    assert "Ваш профиль" in text and "Где вас упоминают" in text
    # Cyrillic in the person's own data comes out as letters, not as missing-glyph boxes.
    assert "Роль: руководитель дежурной смены." in text
    assert "Вопросы — Ивану Петрову." in text
    assert "ООО «Пример»" in text


def test_the_english_answer_reads_in_english(rendered):
    text = rendered["en"]
    assert "What we hold about you" in text
    assert "Your profile" in text and "Where you are mentioned elsewhere" in text
    assert "Роль: руководитель дежурной смены." in text  # the data stays as it is
    assert "Что мы храним" not in text
