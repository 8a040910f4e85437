"""
WSGI config for memoryadmin project.

It exposes the WSGI callable as a module-level variable named ``application``.

For more information on this file, see
https://docs.djangoproject.com/en/6.1/howto/deployment/wsgi/
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

application = get_wsgi_application()

from django.conf import settings  # noqa: E402 - configured by the line above

if settings.DEBUG:
    # The demo runs gunicorn, which serves no static files: in debug mode (never in
    # production, where the proxy or WhiteNoise does) serve them as runserver would.
    from django.contrib.staticfiles.handlers import StaticFilesHandler

    application = StaticFilesHandler(application)

from projects.bodies import ChunkedBodies  # noqa: E402 - needs the settings too

# A body sent chunked (no Content-Length) is read within the limit, or refused with 411/413;
# Django alone would read it as empty (projects/bodies.py).
application = ChunkedBodies(application)
