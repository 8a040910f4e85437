"""A real OpenID Connect provider on loopback, for the tests and the demo.

A small Django project of its own built on django-oauth-toolkit's OIDC support: RS256 keys,
discovery, JWKS, userinfo, RP-initiated logout, refresh tokens, PKCE required. It keeps its
SQLite database, signing key and secret key in a folder of its own, has its own login page,
and puts each user's Django groups into a `groups` claim. Access tokens are JWTs too, their
audience the resource the client named (RFC 8707), so the console's MCP endpoint checks them as
a resource server; a public client `mcp-client` (loopback redirects, PKCE) is registered for
MCP hosts, and introspection (RFC 7662) says a disabled person's token is no longer active.

    python -m devtools.oidc_provider serve --dir .demo/idp --port 9100 \
        --client-id console --client-secret S --redirect-uri http://127.0.0.1:8000/sso/complete/oidc/

For tests it answers a few control calls under /testing/ (a bearer token given at start):
add or change users and their groups, disable or delete a user, and switches that make its
next ID or access tokens misbehave (signed with another key, expired, another audience or issuer), so the
console's checks are exercised against a real provider process. `server.OidcProvider` starts
and stops it.
"""
