"""The memory store's refusals and failures: a stable `code` for programs, `message` for people.

The runner API and the console pages turn these into answers (409 for a conflict, 503 for
storage trouble, a message at the field for rejected content).
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from projects.errors import Refusal


class StoreError(Refusal):
    """Base of the store's errors; `code` is stable, `message` is for people."""

    code = "store_error"


class ContentRejected(StoreError):
    code = "content_rejected"


class FileDeleted(StoreError):
    code = "file_deleted"


class TargetExists(StoreError):
    """A rename's new path holds a live file already: nothing is overwritten."""

    code = "target_exists"


class StorageUnavailable(StoreError):
    """S3 did not answer properly. `outcome` is "not_applied" when nothing can have changed
    (the failure came before the head object was written), "unknown" when the write may have
    reached S3 with its answer lost: only a retry (idempotent) or a read settles it."""

    code = "storage_unavailable"

    def __init__(self, message: str, *, outcome: str = "not_applied"):
        super().__init__(message)
        self.outcome = outcome

    @classmethod
    def nothing_changed(cls) -> StorageUnavailable:
        return cls(
            _(
                "The memory storage (S3) did not answer properly, so nothing was changed. "
                "Try again in a moment; your text is kept."
            )
        )

    @classmethod
    def outcome_unknown(cls) -> StorageUnavailable:
        return cls(
            _(
                "The memory storage (S3) did not answer while the change was being "
                "written, so whether it was applied is unknown. Try again in a moment "
                "(the same request again is safe: a change that did land is recognised, "
                "not written twice); your text is kept."
            ),
            outcome="unknown",
        )


class SaveConflict(StoreError):
    """The file moved on since the caller's base; carries both texts so nothing is lost."""

    code = "conflict"

    def __init__(self, *, reason: str, head, head_text: str, your_text: str, base_revision: int | None):
        if reason == "external_change":
            summary = _(
                "The file was changed directly in storage since you opened it; that "
                "change is now revision %(number)s."
            ) % {"number": head.number if head else "-"}
        else:
            summary = _(
                "The file changed since you opened it (you started from revision "
                "%(base)s, the latest is %(head)s)."
            ) % {
                "base": base_revision if base_revision is not None else _("none"),
                "head": head.number if head else _("none"),
            }
        super().__init__(_("%(summary)s Your text is kept below.") % {"summary": summary})
        self.summary = summary  # without the editor's note, for callers that keep no text
        self.reason = reason
        self.head = head
        self.head_text = head_text
        self.your_text = your_text
        self.base_revision = base_revision


class Held(StoreError):
    """A legal hold stands over what was to be deleted (erasure, delete, retention); the
    message names the hold."""

    code = "legal_hold"


class RevisionExpired(StoreError):
    """The revision's text was deleted under a retention rule; its record stays."""

    code = "revision_expired"


class ConsentWithdrawn(StoreError):
    """The person withdrew their consent: agents may not write their profile (memory.consent)."""

    code = "consent_withdrawn"
