"""Settings come from the environment; production refuses to start without secrets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.db_independent

ROOT = Path(__file__).resolve().parent.parent


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MGC_")}
    clean.pop("DATABASE_URL", None)
    clean.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set for the browser tests only
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def test_production_without_secret_key_fails_at_start():
    result = _manage("check", MGC_ENV="production")
    assert result.returncode != 0
    assert "MGC_SECRET_KEY is required" in result.stderr


def test_check_deploy_is_clean_with_production_values():
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        MGC_ENV="production",
        MGC_SECRET_KEY="x" * 64 + "-production-secret-0123",
        MGC_ALLOWED_HOSTS="memory.example.com",
    )
    assert result.returncode == 0, result.stderr + result.stdout


def test_bad_boolean_is_a_clear_error():
    result = _manage("check", MGC_DEBUG="maybe")
    assert result.returncode != 0 and "MGC_DEBUG must be a boolean" in result.stderr
