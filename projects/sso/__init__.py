"""Single sign-on through OpenID Connect: the console's side.

The protocol is python-social-auth's (social-auth-core's OpenIdConnectAuth, through
social-auth-app-django), chosen over the two other maintained Django options after reading
their code:

- social-auth-core: the authorization code flow with PKCE (S256); the discovery document
  names every endpoint; the ID token's signature is checked against the provider's JWKS
  every time, with its issuer, audience, expiry, iat, azp and at_hash; the nonce is bound
  to the state of this browser's request and used once; refreshed ID tokens are validated
  too, and must keep the first one's iss, sub and aud. Its errors carry stable codes.
- django-allauth 65: discovery and PKCE, but it checks no nonce, and skips the signature of
  an ID token that came from the token endpoint (spec-permitted, but a forged token would
  then pass); it also brings its own account, e-mail and sign-up apps.
- mozilla-django-oidc 5: PKCE and nonce, but no discovery and no audience or issuer check
  (`verify_aud: False`).

None of them does RP-initiated logout for a generic provider: views.logout builds that
redirect from the discovery document's end_session_endpoint.

Modules: backend (the provider backend, local passwords), pipeline (accounts and
memberships at sign-in), session (re-confirming sessions with the provider: offboarding),
errors (failures as pages), views (begin, callback, logout), context (the login page).
"""
