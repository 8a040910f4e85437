"""The console's URLs plus one bare JSON view: the floor a Django request cannot go below."""

from django.http import JsonResponse
from django.urls import include, path


def ping(request):
    return JsonResponse({"ok": True})


urlpatterns = [
    path("bench/ping/", ping),
    path("", include("memoryadmin.urls")),
]
