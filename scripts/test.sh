#!/usr/bin/env bash
# The whole suite on SQLite and on PostgreSQL, side by side (see tests/conftest.py for which
# test runs where): the runs share nothing
# (each starts its own SeaweedFS on free ports, its own test database) and mostly wait on
# I/O, so running them together halves the wall time on two cores. The PostgreSQL run's
# output follows the SQLite run's; the exit status is the worse of the two.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON_BIN:-.venv/bin/python}"
LOG="$(mktemp -t mgc-test-postgres.XXXXXX)"
# The tests marked `demo` (make demo's script, twice: slow, with a database of its own) run in
# a third lane beside the two (much of their time is waiting for servers to start); the two
# runs leave them out (tests/conftest.py).
LINT_LOG="$(mktemp -t mgc-lint.XXXXXX)"
make lint >"$LINT_LOG" 2>&1 &
LINT=$!
DEMO_LOG="$(mktemp -t mgc-test-demo.XXXXXX)"
"$PY" -m pytest -m demo --durations=5 tests/test_demo.py >"$DEMO_LOG" 2>&1 &
DEMO=$!
export MGC_TEST_SPLIT=1
DATABASE_URL="${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}" \
  "$PY" -m pytest --durations=40 "$@" >"$LOG" 2>&1 &
POSTGRES=$!
echo "== SQLite run (the PostgreSQL run goes on beside it; its output follows) =="
"$PY" -m pytest --durations=40 "$@"
SQLITE_STATUS=$?
wait $POSTGRES
POSTGRES_STATUS=$?
wait $DEMO
DEMO_STATUS=$?
wait $LINT
LINT_STATUS=$?
echo
echo "== PostgreSQL run =="
cat "$LOG"
rm -f "$LOG"
echo
echo "== make demo's tests (tests/test_demo.py -m demo) =="
cat "$DEMO_LOG"
rm -f "$DEMO_LOG"
echo
echo "== make lint =="
cat "$LINT_LOG"
rm -f "$LINT_LOG"
if [ $SQLITE_STATUS -ne 0 ] || [ $POSTGRES_STATUS -ne 0 ] || [ $DEMO_STATUS -ne 0 ] || [ $LINT_STATUS -ne 0 ]; then
  echo "FAILED: SQLite run exit $SQLITE_STATUS, PostgreSQL run exit $POSTGRES_STATUS," \
    "make demo's tests exit $DEMO_STATUS, make lint exit $LINT_STATUS" >&2
  exit 1
fi
