"""The workspace as folders: what lies directly in one folder (its subfolders and files)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from projects.models import MemoryFile, Project


@dataclass
class Folder:
    path: str  # "" for the root, else "decisions/2026" (no slashes at the ends)
    subfolders: list[str]
    files: QuerySet[MemoryFile]  # directly in this folder, by path

    @property
    def crumbs(self) -> list[tuple[str, str]]:
        """(path, name) of each folder from the root down to this one."""
        parts = self.path.split("/") if self.path else []
        return [("/".join(parts[: n + 1]), part) for n, part in enumerate(parts)]


def workspace_folder(project: Project, folder: str) -> Folder:
    folder = folder.strip("/")
    prefix = f"{folder}/" if folder else ""
    # A record without a revision has no content to show (a first save cut short before
    # reconcile completes it, or an editor opened and left before the console stopped
    # creating records ahead of the first save).
    paths = MemoryFile.objects.filter(
        project=project, scope=MemoryFile.Scope.WORKSPACE, path__startswith=prefix, head__isnull=False
    )
    subfolders, file_ids = set(), []
    for pk, path in paths.values_list("pk", "path").order_by("path"):
        rest = path[len(prefix) :]
        if "/" in rest:
            subfolders.add(rest.split("/", 1)[0])
        else:
            file_ids.append(pk)
    files = MemoryFile.objects.filter(pk__in=file_ids).select_related("head").order_by("path")
    return Folder(folder, sorted(subfolders), files)
