"""The console's WSGI application with bench/urls.py (its floor view) as the URLconf, for
the throughput figures: the same gunicorn configuration serves the hook and its floor."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
application = get_wsgi_application()
settings.ROOT_URLCONF = "bench.urls"
