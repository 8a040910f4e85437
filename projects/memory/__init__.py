"""Memory: the Markdown files in S3 and their history.

Keys (layout), what a file may hold (content), the S3 calls (storage, lean), saving with
lost-update protection (store, recording, metadata), reading (reading, history), delete and
rename (removal), what the bucket holds unrecorded (adoption, catchup), search copies and
search, the key classifier and repairs (reconcile), the personal-data scanner, diffs, and who
wrote what bypassed the console (provenance). Imports only the foundation (models, audit,
errors).
"""
