"""Pages of the console, thin: each asks a service or selector and renders.

browse (projects, agents, people, workspace tree), files (read, editor, history, diff,
restore, delete), runs (simulate, agent settings, tokens and S3 credentials, sessions,
proposals), governance (audit trail, review, members, isolation, export, erasure, search,
projects and agents), dashboard (the first page, per role).
"""
