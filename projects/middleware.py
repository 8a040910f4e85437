"""Request guards that must act before a view parses anything."""

from django.conf import settings
from django.http import JsonResponse


class ApiBodyLimitMiddleware:
    """Refuse oversize runner API bodies with a JSON 413 before they are read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > settings.MGC_API_MAX_BODY_BYTES:
                return JsonResponse({"error": {
                    "code": "body_too_large" if length > 0 else "bad_length",
                    "message": f"Request bodies are limited to "
                               f"{settings.MGC_API_MAX_BODY_BYTES:,} bytes."}}, status=413)
        return self.get_response(request)
