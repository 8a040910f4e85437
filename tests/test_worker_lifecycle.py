"""A gunicorn worker's start and stop (memoryadmin/gunicorn.conf.py): it warms up before its
first request, a worker that stopped cleanly ends without the interpreter's slow teardown
(which outlasted the demo's graceful timeout), and one that failed exits the usual way, with
its exit code. Request threads share one botocore loader, so a thread's first S3 call does not
parse S3's model files again."""

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from projects.memory.storage import storage_for
from projects.runners.tokenizer import get_tokenizer
from projects.warmup import warm_up

pytestmark = pytest.mark.db_independent

ROOT = Path(__file__).resolve().parent.parent

EXIT = """import atexit, os, runpy, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "memoryadmin.settings"
import django
django.setup()
marker = sys.argv[2]
atexit.register(lambda: open(marker, "w").write("the interpreter's teardown ran"))
conf = runpy.run_path("memoryadmin/gunicorn.conf.py")
try:
    sys.exit(int(sys.argv[1]))  # how gunicorn's arbiter ends a worker process
finally:
    conf["worker_exit"](None, None)
"""


@pytest.mark.parametrize("code, teardown", [(0, False), (3, True)])
def test_a_clean_stop_skips_the_teardown_and_a_failure_keeps_its_exit_code(tmp_path, code, teardown):
    marker = tmp_path / "teardown"
    done = subprocess.run(
        [sys.executable, "-c", EXIT, str(code), str(marker)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code, done.stderr
    assert marker.exists() is teardown


@pytest.mark.django_db
def test_warm_up_loads_what_the_first_request_needs(caplog, s3, project):
    with caplog.at_level(logging.WARNING, logger="projects.warmup"):
        spent = warm_up()
    assert set(spent) == {"tokenizer", "urls", "templates", "database", "storage", "runner API"}
    assert caplog.records == []  # every step ran
    hits = get_tokenizer.cache_info().hits
    get_tokenizer()
    assert get_tokenizer.cache_info().hits == hits + 1  # loaded once, kept

    loaders = []
    storage = storage_for(project)
    threads = [threading.Thread(target=lambda: loaders.append(storage.client._loader)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loaders) == 2 and loaders[0] is loaders[1]  # two threads, two clients, one loader
