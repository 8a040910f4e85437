#!/usr/bin/env bash
# The embedded demo: SeaweedFS (a real S3 server) on 127.0.0.1, SQLite, demo data, the
# console (gunicorn) on http://127.0.0.1:8000 and the events worker beside it. Everything
# lives under .demo/ and survives Ctrl+C: the next `make demo` serves the same memory, edits
# included. `make demo-reset` starts over.
set -euo pipefail
cd "$(dirname "$0")/.."

# Ports: the one named in MGC_DEMO_PORT / MGC_DEMO_S3_PORT, or a clear failure if it is taken;
# without a name, 8000 / 9000 or the next free one (devtools/ports.py says which on stderr).
web_port() {
  python -m devtools.ports "$1" ${MGC_DEMO_PORT:+--exact} --name "the console" --variable MGC_DEMO_PORT
}
S3_PORT="$(python -m devtools.ports "${MGC_DEMO_S3_PORT:-9000}" ${MGC_DEMO_S3_PORT:+--exact} \
  --name "the S3 server" --variable MGC_DEMO_S3_PORT)"
WEB_PORT="$(web_port "${MGC_DEMO_PORT:-8000}")"
# Single sign-on: a demo identity provider of its own (devtools/oidc_provider), unless
# MGC_DEMO_SSO=0 or the environment names a real one (MGC_OIDC_ISSUER).
DEMO_SSO=0
if [ "${MGC_DEMO_SSO:-1}" = "1" ] && [ -z "${MGC_OIDC_ISSUER:-}" ]; then
  DEMO_SSO=1
  IDP_PORT="$(python -m devtools.ports "${MGC_DEMO_IDP_PORT:-9100}" ${MGC_DEMO_IDP_PORT:+--exact} \
    --name "the identity provider" --variable MGC_DEMO_IDP_PORT)"
fi
DEMO="${MGC_DEMO_DIR:-$PWD/.demo}"
mkdir -p "$DEMO"
chmod 700 "$DEMO"

# Secrets made once and kept with the data (the S3 identity file and the demo password).
if [ ! -f "$DEMO/secrets.env" ]; then
  python - "$DEMO/secrets.env" <<'PY'
import secrets, sys
with open(sys.argv[1], "w") as out:
    out.write(f"MGC_S3_ACCESS_KEY_ID=demo-{secrets.token_hex(8)}\n")
    out.write(f"MGC_S3_SECRET_ACCESS_KEY={secrets.token_urlsafe(30)}\n")
    out.write(f"MGC_DEMO_PASSWORD={secrets.token_urlsafe(12)}\n")
PY
  chmod 600 "$DEMO/secrets.env"
fi
if ! grep -q "^MGC_DEMO_IDP_SECRET=" "$DEMO/secrets.env"; then  # demos made before SSO
  python -c 'import secrets; print(f"MGC_DEMO_IDP_SECRET={secrets.token_urlsafe(30)}")' >>"$DEMO/secrets.env"
fi
if ! grep -q "^MGC_METRICS_TOKEN=" "$DEMO/secrets.env"; then  # demos made before /metrics
  python -c 'import secrets; print(f"MGC_METRICS_TOKEN={secrets.token_urlsafe(24)}")' >>"$DEMO/secrets.env"
fi
set -a
# shellcheck disable=SC1091
source "$DEMO/secrets.env"
set +a

export MGC_DEBUG="${MGC_DEBUG:-1}"
export DATABASE_URL="${DATABASE_URL:-sqlite:///$DEMO/db.sqlite3}"
export MGC_S3_ENDPOINT_URL="${MGC_S3_ENDPOINT_URL:-http://127.0.0.1:$S3_PORT}"
export MGC_S3_BUCKET="${MGC_S3_BUCKET:-agent-memory}"
# Webhook receivers on this machine are allowed in the demo (production refuses them).
export MGC_WEBHOOK_ALLOWED_NETWORKS="${MGC_WEBHOOK_ALLOWED_NETWORKS:-127.0.0.1,::1}"
# What scripts/demo-manage.sh needs to run manage.py against this demo while it runs.
printf 'DATABASE_URL=%s\nMGC_S3_ENDPOINT_URL=%s\nMGC_S3_BUCKET=%s\nMGC_WEBHOOK_ALLOWED_NETWORKS=%s\n' \
  "$DATABASE_URL" "$MGC_S3_ENDPOINT_URL" "$MGC_S3_BUCKET" "$MGC_WEBHOOK_ALLOWED_NETWORKS" \
  >"$DEMO/running.env"

echo "Starting SeaweedFS (S3 on 127.0.0.1:$S3_PORT, data in $DEMO/s3) ..."
# The last run's log says "ready on" too, and the `>` below truncates it only once the
# background job gets to run: the wait below could read the old log first (about one time in
# ten on a busy machine) and go on before SeaweedFS is up. So the old log goes first.
rm -f "$DEMO/s3.log"
# The secrets reach both commands through the environment (exported above), never argv.
python -m devtools.seaweed serve --dir "$DEMO/s3" --port "$S3_PORT" >"$DEMO/s3.log" 2>&1 &
S3_PID=$!
trap 'kill $S3_PID 2>/dev/null || true; wait $S3_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  grep -q "ready on" "$DEMO/s3.log" 2>/dev/null && break
  if ! kill -0 $S3_PID 2>/dev/null; then cat "$DEMO/s3.log" >&2; exit 1; fi
  sleep 0.1
done
grep -q "ready on" "$DEMO/s3.log" || { echo "SeaweedFS did not start; see $DEMO/s3.log" >&2; exit 1; }
# The console follows the filer's change stream, so pre hooks list the bucket only when a
# runner wrote something (projects/memory/feed.py).
export MGC_S3_CHANGE_FEED=seaweedfs
MGC_S3_FILER_ADDRESS="$(sed -n 's/.*; filer \([^ ]*\)$/\1/p' "$DEMO/s3.log" | tail -n1)"
export MGC_S3_FILER_ADDRESS

python manage.py ensure_bucket
python manage.py migrate --noinput -v 0
MGC_DEMO_URL="http://127.0.0.1:$WEB_PORT" python manage.py seed_demo --if-empty >"$DEMO/seed.new"
if grep -q "^runner token" "$DEMO/seed.new"; then
  mv "$DEMO/seed.new" "$DEMO/seed.txt"  # the first run's output: the runner token is in it
  chmod 600 "$DEMO/seed.txt"
else
  cat "$DEMO/seed.new"; rm -f "$DEMO/seed.new"
  echo "(make demo-reset starts over with fresh demo data)"
fi

# Retention runs on a schedule in production (docs/DEPLOY.md); the demo applies it once here.
python manage.py retention | sed 's/^/retention: /'
# Subjects' requests' reminders (due soon, overdue; once each): the events worker below sends
# them every MGC_SUBJECT_REMIND_SECONDS; the command does the same once, on any schedule.
python manage.py subject_request remind | sed 's/^/subject requests: /'

echo
echo "Users: admin, compliance, employee (also ivan.petrov, anna.smirnova); password: $MGC_DEMO_PASSWORD"
grep "^runner token" "$DEMO/seed.txt" 2>/dev/null || true
echo "S3: $MGC_S3_ENDPOINT_URL, bucket $MGC_S3_BUCKET, key $MGC_S3_ACCESS_KEY_ID (unsigned requests get 403)"
# Starting S3, migrating and seeding took a while: the port may have been taken meanwhile.
WEB_PORT="$(web_port "$WEB_PORT")"
IDP_PID=""
if [ "$DEMO_SSO" = "1" ]; then
  # Its client is the console at this very port; users and secret through the environment.
  export MGC_OIDC_ISSUER="http://127.0.0.1:$IDP_PORT/o" MGC_OIDC_CLIENT_ID=memory-console \
    MGC_OIDC_CLIENT_SECRET="$MGC_DEMO_IDP_SECRET" MGC_OIDC_PROVIDER_NAME="${MGC_OIDC_PROVIDER_NAME:-Demo IdP}"
  MGC_IDP_CLIENT_SECRET="$MGC_DEMO_IDP_SECRET" \
  MGC_IDP_USERS="alice:$MGC_DEMO_PASSWORD:sre;boris:$MGC_DEMO_PASSWORD:compliance-team" \
    python -m devtools.oidc_provider serve --dir "$DEMO/idp" --port "$IDP_PORT" \
      --client-id memory-console --redirect-uri "http://127.0.0.1:$WEB_PORT/sso/complete/oidc/" \
      --post-logout-uri "http://127.0.0.1:$WEB_PORT/accounts/login/" >"$DEMO/idp.log" 2>&1 &
  IDP_PID=$!
  trap 'kill $IDP_PID 2>/dev/null || true; kill $S3_PID 2>/dev/null || true; wait $S3_PID 2>/dev/null || true' EXIT
  python manage.py group_mapping --set sre=incident-analysis:employee \
    --set compliance-team=incident-analysis:compliance --set compliance-team=tenders:compliance >/dev/null
  python - "$MGC_OIDC_ISSUER" "$IDP_PID" <<'PY' || { cat "$DEMO/idp.log" >&2; exit 1; }
import os, sys, time, urllib.request
issuer, pid = sys.argv[1], int(sys.argv[2])
for _ in range(600):
    try:
        urllib.request.urlopen(issuer + "/.well-known/openid-configuration", timeout=2).read()
        sys.exit(0)
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit("the identity provider exited")
        time.sleep(0.1)
sys.exit("the identity provider did not answer")
PY
  echo "Single sign-on: $MGC_OIDC_ISSUER (Demo IdP, data in $DEMO/idp); \"Sign in with Demo IdP\" as"
  echo "  alice (group sre: employee in incident-analysis) or boris (group compliance-team: compliance),"
  echo "  password as above. Offboarding: .venv/bin/python -m devtools.oidc_provider disable --dir $DEMO/idp alice"
  echo "  (the console asks the provider again every ${MGC_OIDC_RECHECK_SECONDS:-60} s; MGC_OIDC_RECHECK_SECONDS=0 asks on every request)"
fi
# The company's memory over MCP: served by the console itself (projects/mcp/).
echo "MCP: http://127.0.0.1:$WEB_PORT/mcp/incident-analysis/incident-analyst/ (one agent) or"
echo "  http://127.0.0.1:$WEB_PORT/mcp/ (any agent, chosen with a tool); an MCP host signs in at the"
if [ "$DEMO_SSO" = "1" ]; then
  echo "  demo identity provider as alice (OAuth client id mcp-client, public, PKCE), or sends the runner token"
else
  echo "  provider named by MGC_OIDC_ISSUER, or sends the runner token as a bearer token"
fi
# The URL is printed once the console answers there (its workers started and warmed up:
# memoryadmin/gunicorn.conf.py), not before; if the server cannot listen on the port after
# all, the script stops and this watcher with it, printing nothing.
python -m devtools.ports announce "$WEB_PORT" \
  "Console: http://127.0.0.1:$WEB_PORT  (Ctrl+C stops it and SeaweedFS; the data stays in $DEMO/)" --http &
ANNOUNCE_PID=$!
# Metrics: the web workers and the events worker count into one folder, /metrics sums them.
export PROMETHEUS_MULTIPROC_DIR="$DEMO/metrics"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
echo "Probes and metrics (docs/DEPLOY.md, section 13): curl -s 127.0.0.1:$WEB_PORT/readyz"
echo "  curl -s -H 'Authorization: Bearer $MGC_METRICS_TOKEN' 127.0.0.1:$WEB_PORT/metrics"
# The events worker (webhooks, audit streams) beside the console: one is enough here;
# docs/DEPLOY.md runs several in production.
python manage.py events_worker >"$DEMO/worker.log" 2>&1 &
WORKER_PID=$!
echo "Events worker: webhooks and audit streams, legal holds, poisoning scans, erasures and retention runs started from a page, subjects' requests' work and reminders (manage.py events_worker; log in $DEMO/worker.log)"
trap 'kill $ANNOUNCE_PID 2>/dev/null || true; kill $WORKER_PID 2>/dev/null || true; [ -z "$IDP_PID" ] || kill $IDP_PID 2>/dev/null || true; kill $S3_PID 2>/dev/null || true; wait $WORKER_PID 2>/dev/null || true; [ -z "$IDP_PID" ] || wait $IDP_PID 2>/dev/null || true; wait $S3_PID 2>/dev/null || true' EXIT
# The same server and worker model as production (memoryadmin/gunicorn.conf.py: threaded
# workers, persistent database connections; docs/DEPLOY.md says why); in debug mode the WSGI
# application serves the static files itself.
export MGC_DB_CONN_MAX_AGE="${MGC_DB_CONN_MAX_AGE:-60}"
# Ctrl+C: requests in flight get 10 s (gunicorn's default 30 s felt like a hang; 5 s was
# outlasted now and then by a worker ending on a busy two-core machine).
export MGC_WEB_GRACEFUL_TIMEOUT="${MGC_WEB_GRACEFUL_TIMEOUT:-10}"
python -m gunicorn -c memoryadmin/gunicorn.conf.py memoryadmin.wsgi --bind "127.0.0.1:$WEB_PORT"
