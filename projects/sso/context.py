def sign_in(request) -> dict:
    """What the login page offers: the provider's button, passwords, or both."""
    from django.conf import settings

    return {
        "sign_in": {
            "sso": settings.MGC_OIDC_ENABLED,
            "provider": settings.MGC_OIDC_PROVIDER_NAME,
            "passwords": settings.MGC_LOCAL_LOGIN,
        }
    }
