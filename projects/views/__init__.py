"""Pages of the console, thin: each asks a service or selector and renders. A page of a
project is a `<name>_view` under base.project_view (sign-in, the project and the role, the
capability, refusals shown), one module per job:

browse (projects, agents, people, workspace tree), files (read, history, revisions, diff,
restore, delete), editor (edit, merge, new workspace file, live preview), simulate (the
prompt an agent would get), agents (manifest, hook policy), tokens (bearer tokens, S3
credentials), sessions, proposals, review (queue, marks, flags), members, groups (provider
groups to roles), compliance (isolation, export, erasure), lifecycle (retention, legal
holds), jobs (where a background erasure or retention run stands), search, trail (the audit
trail), setup (new projects and agents, project settings), webhooks, signin (lockouts, the
set-password link), dashboard (the first page, per role); paging holds the page sizes.
"""
