"""SCIM 2.0 provisioning at /scim/v2/ (Users and Groups): the directory tells the console who
joins, changes and leaves, without waiting for their next sign-in.

Built on the python-scim toolkit: scim2-server does the protocol (routes, filters, PATCH,
ETags, discovery, errors) over a storage of ours (`storage.py`, the console's records), on
scim2-models' schemas; the tests check it with scim2-tester and drive it with scim2-client.
django-scim2 was the Django-shaped alternative, but its 0.23.0 requires Django < 6.1.

- `tokens.py`: the identity provider's bearer tokens (made and revoked by a superuser,
  audited);
- `storage.py`: Users and Groups as scim2-server's storage, over ScimUser and ScimGroup;
- `provisioning.py`: what a change means for the console: an account made, renamed,
  deactivated (its sessions end and the tokens its person made are revoked at once, the
  projects' leaver rule starts counting), reactivated; memberships following the groups
  through the same provider group mappings as a sign-in;
- `views.py`: the Django view that hands requests to scim2-server.
"""
