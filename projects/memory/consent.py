"""Withdrawn consent, as the save path reads it: while a person's consent stands withdrawn
(a ConsentWithdrawal without `restored_at`, in the file's project or everywhere), no agent
writes their profile, directly or through an approved proposal, and no agent proposes to.
People (the person, an admin correcting it) still may."""

from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext as _

from projects.memory.errors import ConsentWithdrawn
from projects.models import ConsentWithdrawal, MemoryFile, Revision


def withdrawn(file: MemoryFile) -> bool:
    """Whether the profile's owner has withdrawn their consent where the file is."""
    if file.scope != MemoryFile.Scope.USER or not file.user_id:
        return False
    return (
        ConsentWithdrawal.objects.filter(user_id=file.user_id, restored_at__isnull=True)
        .filter(Q(project__isnull=True) | Q(project_id=file.project_id))
        .exists()
    )


def refuse_agent_write(file: MemoryFile, actor) -> None:
    """ConsentWithdrawn when an agent would write (or propose to write) the profile of a
    person who withdrew their consent; one query, and only for an agent and a profile."""
    if actor.kind == Revision.AuthorKind.AGENT and withdrawn(file):
        raise ConsentWithdrawn(
            _("The person withdrew their consent: agents may not write or propose changes to their profile.")
        )
