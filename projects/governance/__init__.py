"""Governance: who may do what, and the record of what was done.

Roles as capabilities (permissions), review marks, flags and the queue, members, projects and
agents (setup), export, erasure, isolation checks and policies, the audit trail as people read
it (trail), and the dashboard. Imports memory and the foundation.
"""
