#!/usr/bin/env bash
# The embedded demo: a local S3-speaking server (moto) on 127.0.0.1, a fresh SQLite database,
# demo data, and the console on http://127.0.0.1:8000. moto keeps its objects in memory, so
# the database is made anew with it on every start: both hold the same demo when you log in.
set -euo pipefail
cd "$(dirname "$0")/.."

S3_PORT="${MGC_DEMO_S3_PORT:-9000}"
WEB_PORT="${MGC_DEMO_PORT:-8000}"
mkdir -p .demo
rm -f .demo/db.sqlite3

export MGC_DEBUG="${MGC_DEBUG:-1}"
export DATABASE_URL="${DATABASE_URL:-sqlite:///$PWD/.demo/db.sqlite3}"
export MGC_S3_ENDPOINT_URL="${MGC_S3_ENDPOINT_URL:-http://127.0.0.1:$S3_PORT}"
export MGC_S3_BUCKET="${MGC_S3_BUCKET:-agent-memory}"

moto_server -H 127.0.0.1 -p "$S3_PORT" >.demo/s3.log 2>&1 &
S3_PID=$!
trap 'kill $S3_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  if python -c "import urllib.request; urllib.request.urlopen('$MGC_S3_ENDPOINT_URL', timeout=1)" 2>/dev/null; then break; fi
  sleep 0.2
done

python manage.py ensure_bucket
python manage.py migrate --noinput -v 0
python manage.py seed_demo
echo "Local S3 endpoint: $MGC_S3_ENDPOINT_URL (bucket $MGC_S3_BUCKET)"
echo "Console: http://127.0.0.1:$WEB_PORT  (Ctrl+C stops it and the S3 server)"
python manage.py runserver "127.0.0.1:$WEB_PORT"
