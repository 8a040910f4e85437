#!/usr/bin/env bash
# make image: an OCI image of the console, from Debian's packages and PyPI only (no other
# registry, no base image pulled). debootstrap makes a minimal Debian trixie (Python 3.13;
# bookworm's 3.11 is too old for Django 6), cached in .image/; the console goes in with its
# runtime lock (pip --require-hashes) and collected static files; podman imports the tree as
# the image, with gunicorn as its command, running as the unprivileged user `mgc`.
#
#   make image                       # builds localhost/memory-console:latest
#   podman run --runtime runc -p 8000:8000 --env-file /etc/mgc/env localhost/memory-console
#
# Needs root (debootstrap and chroot), debootstrap and podman from Debian. The committed and
# staged files of this checkout go in (git ls-files), never .venv, .demo or secrets.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${MGC_IMAGE:-localhost/memory-console:latest}"
CACHE="${MGC_IMAGE_CACHE:-$PWD/.image}"
SUITE="${MGC_IMAGE_SUITE:-trixie}"
MIRROR="${MGC_IMAGE_MIRROR:-http://deb.debian.org/debian}"
for tool in debootstrap podman chroot git; do
  command -v "$tool" >/dev/null || { echo "make image needs $tool (apt-get install -y debootstrap podman)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "make image needs root (debootstrap, chroot)" >&2; exit 1; }

base="$CACHE/base-$SUITE"
if [ ! -x "$base/usr/bin/python3" ]; then
  echo "debootstrap $SUITE into $base (once; a few minutes) ..."
  rm -rf "$base.tmp"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$SUITE" "$base.tmp" "$MIRROR" >"$CACHE/debootstrap.log"
  mv "$base.tmp" "$base"
fi

root="$CACHE/rootfs"
rm -rf "$root"
cp -a "$base" "$root"
app="$root/opt/mgc/app"
mkdir -p "$app"
git ls-files -z --cached | tar --null -T - -cf - | tar -xf - -C "$app"

# Build-time only: the host's resolver and CA bundle (pip may sit behind a proxy whose CA the
# host trusts); both are removed before the image is packed.
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$root/tmp/build-ca.crt"
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/opt/mgc/venv/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    PIP_CERT=/tmp/build-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
    ${PIP_INDEX_URL:+PIP_INDEX_URL="$PIP_INDEX_URL"} "$@"
}
echo "installing requirements.lock into /opt/mgc/venv ..."
in_root /usr/bin/python3 -m venv /opt/mgc/venv
in_root pip install --quiet --no-cache-dir --require-hashes -r /opt/mgc/app/requirements.lock
# Static files, hashed for WhiteNoise (production serves them when no proxy does); the key
# only lets settings load for this one command.
in_root sh -c 'cd /opt/mgc/app && MGC_ENV=production MGC_SECRET_KEY=collectstatic-only-not-a-secret \
  MGC_STATIC_ROOT=/opt/mgc/app/staticfiles python manage.py collectstatic --noinput -v 0'
in_root groupadd --system mgc
in_root useradd --system --gid mgc --home-dir /opt/mgc --no-create-home --shell /usr/sbin/nologin mgc
mkdir -p "$root/var/lib/mgc"
chroot "$root" chown mgc:mgc /var/lib/mgc
rm -f "$root/tmp/build-ca.crt" "$root/etc/resolv.conf"
rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/root/.cache"
find "$root/opt/mgc" -name __pycache__ -prune -exec rm -rf {} +

echo "importing $IMAGE ..."
tar -C "$root" -cf - . | podman import \
  --change 'USER mgc' \
  --change 'WORKDIR /opt/mgc/app' \
  --change 'ENV PATH=/opt/mgc/venv/bin:/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV MGC_ENV=production' \
  --change 'ENV DJANGO_SETTINGS_MODULE=memoryadmin.settings' \
  --change 'ENV MGC_WEB_BIND=0.0.0.0:8000' \
  --change 'ENV MGC_STATIC_ROOT=/opt/mgc/app/staticfiles' \
  --change 'ENV MGC_TOKENIZER_CACHE_DIR=/var/lib/mgc/tokenizer' \
  --change 'ENV PROMETHEUS_MULTIPROC_DIR=/var/lib/mgc/metrics' \
  --change 'EXPOSE 8000' \
  --change 'CMD ["gunicorn", "-c", "memoryadmin/gunicorn.conf.py", "memoryadmin.wsgi"]' \
  --message "memory-console $(git rev-parse --short HEAD)" \
  - "$IMAGE" >/dev/null
rm -rf "$root"
echo "built $IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
