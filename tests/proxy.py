"""The production proxy in tests: Debian's nginx running the project's own deploy/nginx/nginx.conf,
rewritten only where a test machine differs from compose (the upstream replicas' and the listening
addresses, the pid, log and temporary paths), in front of real `serve` processes."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.deploy.deployment import DEPLOY, app_replicas, compose

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"  # Debian's package puts it in sbin
# Where nginx reaches the replicas from on a test machine: the proxy's address, as the replicas see it.
PROXY_ADDRESS = "127.0.0.1"


def nginx_config(tmp: Path, port: int, upstream_ports: list[int]) -> Path:
    """deploy/nginx/nginx.conf listening on 127.0.0.1:port, its replicas at 127.0.0.1:upstream_ports."""
    text = (DEPLOY / "nginx" / "nginx.conf").read_text()
    servers = iter(upstream_ports)
    text, replaced = re.subn(r"(?m)^(\s*server\s+)app-\d+:8000\b", lambda m: f"{m[1]}127.0.0.1:{next(servers)}", text)
    assert replaced == len(upstream_ports), f"nginx.conf names {replaced} replicas"
    text, listens = re.subn(r"(?m)^(\s*listen\s+)8080;", rf"\g<1>127.0.0.1:{port};", text)
    assert listens == 1
    temp = tmp / "nginx-temp"
    temp.mkdir(mode=0o777, exist_ok=True)
    temp.chmod(0o777)  # the workers run as nobody when the master is root
    paths = "".join(
        f"    {kind}_temp_path {temp / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    text = text.replace("http {\n", "http {\n" + paths, 1)
    config = tmp / "nginx.conf"
    config.write_text(text)
    return config


@contextmanager
def running_nginx(tmp: Path, port: int, upstream_ports: list[int]) -> Iterator[str]:
    """The proxy's URL while nginx runs (in the foreground, stopped after)."""
    assert Path(NGINX).exists(), "nginx is missing: `./scripts/dev test` installs it (apt)"
    config = nginx_config(tmp, port, upstream_ports)
    globals_ = f"daemon off; pid {tmp / 'nginx.pid'};"
    command = [NGINX, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(config), "-g", globals_]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, f"nginx exited: {(tmp / 'error.log').read_text(errors='replace')}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def replica_environment(**overrides: str) -> dict[str, str]:
    """compose.yaml's environment of an app replica, as its values are there: what compose fills in
    from the operator's environment (`${...}`) comes from overrides, and the address it trusts
    X-Forwarded-For from, if it is the proxy's fixed address in compose, is the proxy's here."""
    replica: dict[str, Any] = next(iter(app_replicas().values()))["environment"]
    env = {name: str(value) for name, value in replica.items() if "${" not in str(value)}
    proxy = compose()["services"]["proxy"].get("networks", {}).get("default", {}) or {}
    if env.get("FORWARDED_ALLOW_IPS") == proxy.get("ipv4_address"):
        env["FORWARDED_ALLOW_IPS"] = PROXY_ADDRESS
    return env | overrides


class Output:
    """A subprocess's output lines, read as they come (a full pipe would block the process)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.lines: list[str] = []
        assert proc.stdout is not None
        stdout = proc.stdout
        self._thread = threading.Thread(target=lambda: self.lines.extend(line.decode() for line in stdout), daemon=True)
        self._thread.start()

    def all(self, timeout_s: float = 10) -> list[str]:
        """Every line, once the process has ended."""
        self._thread.join(timeout_s)
        return list(self.lines)
