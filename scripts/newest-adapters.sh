#!/usr/bin/env bash
# runnerkit's MCP server and Claude memory tool against the newest `mcp`, `mcp-types` and
# `anthropic` its extras allow (runnerkit/pyproject.toml), not only the locked ones: what
# `pip install './runnerkit[mcp,anthropic]'` gives a newcomer today. The newest wheels go
# into a temporary folder put first on the path (no second venv); their own requirements must
# be met by the locked environment, or this says which to lock anew. Then only the adapter
# tests of the packages newer than the lock run against them (tests/test_mcp_server.py for
# mcp, tests/test_memory_tool.py for anthropic).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON_BIN:-.venv/bin/python}"
NEWEST="$(mktemp -d -t mgc-newest-adapters.XXXXXX)"
trap 'rm -rf "$NEWEST"' EXIT

mapfile -t WANTED < <("$PY" - <<'PY'
import tomllib
extras = tomllib.load(open("runnerkit/pyproject.toml", "rb"))["project"]["optional-dependencies"]
for name in ("mcp", "anthropic"):
    print(*extras[name], sep="\n")
PY
)
"$PY" -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$NEWEST" "${WANTED[@]}"

# Their requirements, met by what is locked (or by each other)?
PYTHONPATH="$NEWEST" "$PY" - "$NEWEST" <<'PY'
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

newest = Path(sys.argv[1])
problems = []
for dist_info in sorted(newest.glob("*.dist-info")):
    dist = metadata.Distribution.at(dist_info)
    print(f"newest allowed: {dist.metadata['Name']} {dist.version}")
    for line in dist.requires or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            found = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{dist.metadata['Name']} needs {requirement}, which is not installed")
            continue
        if not requirement.specifier.contains(found, prereleases=True):
            problems.append(f"{dist.metadata['Name']} needs {requirement}; the lock has {found}")
if problems:
    sys.exit("The newest allowed versions need more than the lock holds (make lock LOCK_FLAGS=--upgrade):\n"
             + "\n".join(problems))
PY

# Only the adapters whose package is newer than the lock: the suite ran the others against
# these very versions already.
mapfile -t FILES < <(PYTHONPATH="$NEWEST" "$PY" - "$NEWEST" <<'PY'
import sys
from importlib import metadata
from pathlib import Path

dists = [metadata.Distribution.at(d) for d in Path(sys.argv[1]).glob("*.dist-info")]
newest = {dist.metadata["Name"].lower(): dist.version for dist in dists}
locked = {}
for line in open("requirements-dev.lock"):
    name, sep, version = line.strip().partition("==")
    if sep:
        locked[name.lower()] = version.split()[0]
tests = {"mcp": "tests/test_mcp_server.py", "mcp-types": "tests/test_mcp_server.py",
         "anthropic": "tests/test_memory_tool.py"}
wanted = set()
for name, test in sorted(tests.items()):
    if newest.get(name) != locked.get(name):
        print(f"{name}: newest {newest.get(name)}, locked {locked.get(name)}", file=sys.stderr)
        wanted.add(test)
    else:
        print(f"{name}: newest is the locked {locked.get(name)}, tested by the suite", file=sys.stderr)
print(*sorted(wanted), sep="\n")
PY
)
mapfile -t FILES < <(printf '%s\n' "${FILES[@]}" | sed '/^$/d')
if [ ${#FILES[@]} -eq 0 ]; then
  echo "every adapter package's newest allowed version is the locked one: the suite tested it"
  exit 0
fi
PYTHONPATH="$NEWEST" "$PY" -m pytest "${FILES[@]}" -q -p no:cacheprovider
