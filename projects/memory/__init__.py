"""Memory: the Markdown files in S3 and their history.

Keys (layout), what a file may hold (content), the S3 calls (storage), saving and reading with
lost-update protection (store), search copies and search, the key classifier and repairs
(reconcile), the personal-data scanner, diffs, and who wrote what bypassed the console
(provenance). Imports only the foundation (models, audit, errors).
"""
