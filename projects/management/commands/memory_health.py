from django.core.management.base import BaseCommand

from projects.management import naming
from projects.memory.health.report import project_health


class Command(BaseCommand):
    help = (
        "Memory health of every project (or one): duplicate, near-duplicate, contradicting and "
        "stale lines with their origins, personal-data and poisoning findings still present, "
        "prompt sizes and cuts, and prompt stability. Reads only."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project slug (default: every project).")
        parser.add_argument("--agent", help="Agent slug (with --project): its files, workspace and prompts.")
        parser.add_argument("--days", type=int, default=30, help="Days of sessions the prompt figures cover.")
        parser.add_argument("--json", action="store_true", help="Print the whole report as JSON.")

    def handle(self, *args, project=None, agent=None, days=30, json=False, **options):
        reports = [
            project_health(item, agent=chosen, days=days)
            for item, chosen in naming.projects_chosen(project, agent)
        ]
        if json:
            self.stdout.write(naming.dumps(reports if not project else reports[0]))
            return
        for report in reports:
            totals = report["totals"]
            self.stdout.write(
                f"{report['project']}\tfiles {totals['files']}\tlines {totals['lines']}\t"
                f"duplicates {totals['exact_duplicates']} exact, {totals['near_duplicates']} near\t"
                f"contradictions {totals['contradictions']}\tstale notes {totals['stale_notes']}\t"
                f"unreceived lines {totals['unreceived_lines']}\tpersonal data {totals['personal_data']}\t"
                f"poisoning {totals['poisoning']}"
            )
            for a in report["agents"]:
                stable = a["stability"]["average"]
                self.stdout.write(
                    f"\tagent {a['agent']}\tsessions {a['sessions']}\tpeak {a['peak_tokens']} tokens"
                    f"\tbudget {a['budget'] or '-'}\tcut {a['cut_sessions']}\tstable prefix "
                    f"{'-' if stable is None else f'{stable:.0%}'}"
                )
