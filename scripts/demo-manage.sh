#!/usr/bin/env bash
# manage.py against the running demo's data (its database, S3 server and keys), e.g.
#   scripts/demo-manage.sh assemble_context --project incident-analysis \
#       --agent incident-analyst --user employee
set -euo pipefail
cd "$(dirname "$0")/.."
DEMO="${MGC_DEMO_DIR:-$PWD/.demo}"
if [ ! -f "$DEMO/running.env" ]; then
  echo "No demo data in $DEMO: start it with make demo first." >&2
  exit 1
fi
set -a
# shellcheck disable=SC1091
source "$DEMO/secrets.env"
# shellcheck disable=SC1091
source "$DEMO/running.env"
set +a
exec "${PYTHON_BIN:-.venv/bin/python}" manage.py "$@"
