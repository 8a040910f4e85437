import json

from django.core.management.base import BaseCommand

from projects.governance import poison_scans
from projects.management import naming
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Find poisoning in memory that got through: every project (or --project SLUG) as its files "
        "stand, or with --history in every stored revision. For each finding: the revision that "
        "introduced the line (author, session), the sessions whose prompts carried it and the "
        "people they served, and whether it is still there. New findings emit "
        "memory.poisoning.detected. Run it after every scanner update."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="The project's slug (default: every project).")
        parser.add_argument(
            "--history", action="store_true", help="Every stored revision, not only the heads."
        )
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="One JSON object per finding, one a line."
        )

    def handle(self, *args, project=None, history=False, as_json=False, **options):
        projects = [naming.project_named(project)] if project else list(Project.objects.order_by("slug"))
        total = 0
        for found in projects:
            scan = poison_scans.scan_now(project=found, history=history)
            total += len(scan.findings)
            for finding in scan.findings:
                if as_json:
                    self.stdout.write(json.dumps({"project": found.slug, **finding}, ensure_ascii=False))
                else:
                    self._print(found, finding)
        if not as_json:
            self.stderr.write(f"{total} finding(s) in {len(projects)} project(s).")

    def _print(self, project, f: dict) -> None:
        introduced = f.get("introduced") or {}
        where = f"{project.slug}: {f['path']} r{f['revision']} line {f['line']}"
        state = "still there" if f["present"] else "removed since"
        self.stdout.write(f"{where}  {f['family']} ({f['reason']}), {state}")
        self.stdout.write(f"  excerpt: {f['excerpt']}")
        if introduced:
            session = f", session {introduced['session']}" if introduced.get("session") else ""
            origin = f"{introduced['path']} r{introduced['revision']} by {introduced['author']}"
            self.stdout.write(f"  introduced: {origin}{session}")
        people = ", ".join(f["people"]) or "nobody named"
        self.stdout.write(f"  carried by {len(f['sessions'])} session(s), serving: {people}")
        for s in f["sessions"]:
            self.stdout.write(
                f"    {s['at']}  {s['session']}  {s['agent']} for {s['user'] or '-'} (r{s['revision']})"
            )
