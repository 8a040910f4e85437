"""The console's WSGI application with bench/urls.py (its floor view) as the URLconf, for
the throughput figures: the same gunicorn configuration serves the hook and its floor."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
application = get_wsgi_application()
settings.ROOT_URLCONF = "bench.urls"
if os.environ.get("BENCH_SIGNIN_UNTHROTTLED") == "1":
    # The login flood's reference figure only: the console as it was before its sign-in was
    # throttled (no lockouts, no pause, no slowdown, no bound on password checks). Never how
    # the product runs.
    settings.MGC_LOGIN_FAILURE_LIMIT = settings.MGC_LOGIN_ADDRESS_FAILURE_LIMIT = 10**9
    settings.MGC_LOGIN_ADDRESS_RATE = "1000000000/s"
    settings.MGC_LOGIN_CHECKS, settings.MGC_LOGIN_CHECK_NICE = 64, 0
