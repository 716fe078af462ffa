"""SGLang's model gateway (`smg`, a pinned dev dependency) as a subprocess on free loopback ports, in
front of (fake) SGLang workers.

The command line is the production one (cache-aware routing, the workers' health checked, a failed
request retried on another worker) plus two kinds of test-only settings: fast failure detection, so
that a stopped worker is noticed within a second instead of a minute, and no warm-up diversions, so
that routing depends only on the prompts. See `command`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import httpx

from tests.servers import free_port

SMG = Path(sys.executable).parent / "smg"  # the console script pip installs next to this Python


def command(port: int, metrics_port: int, worker_urls: list[str]) -> list[str]:
    return [
        str(SMG), "launch", "--host", "127.0.0.1", "--port", str(port), "--worker-urls", *worker_urls,
        # A prompt that shares at least 30% of its characters with what a worker was sent goes to that
        # worker (its radix cache holds the prefix); otherwise to the worker that holds the least.
        "--policy", "cache_aware", "--cache-threshold", "0.3",
        # Leave the prefix's worker for the least loaded one only when it carries 64 more requests than
        # the mean and 1.5 times as many: a hot worker still gets its tenants while it keeps up.
        "--balance-abs-threshold", "64", "--balance-rel-threshold", "1.5",
        # Test only: no warm-up slice (a new worker gets every 4th cache miss and every 8th cache hit
        # for its first 60 s). In production it fills a new worker's cache; here it would make the
        # routing depend on timing instead of prompts.
        "--worker-warmup-secs", "0", "--worker-warmup-divert-every", "0",
        # Test only (smg's defaults: every 60 s, out after 3 misses): probe /health every second, and a
        # worker is out at the first miss.
        "--health-check-interval-secs", "1", "--health-check-timeout-secs", "1", "--health-failure-threshold", "1",
        # A request the worker refused to connect for is retried on another, quickly.
        "--retry-max-retries", "3", "--retry-initial-backoff-ms", "10", "--retry-max-backoff-ms", "100",
        "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
        "--log-level", "warn",
    ]  # fmt: skip


class RunningGateway:
    def __init__(self, worker_urls: list[str], log_path: Path) -> None:
        if not SMG.exists():
            raise RuntimeError(f"{SMG} is missing: smg is a pinned dev dependency (pip install -e '.[dev]')")
        self.port, self.metrics_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log_path = log_path
        self._log: IO[str] = log_path.open("w")
        # A session of its own, so that stop() reaches anything it starts.
        self._process = subprocess.Popen(
            command(self.port, self.metrics_port, worker_urls),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_until_routing(len(worker_urls))
        except BaseException:
            self.stop()
            raise

    def workers(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.url}/workers", timeout=2).json()["workers"])

    def _wait_until_routing(self, count: int) -> None:
        deadline = time.monotonic() + 30
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"smg exited with {self._process.returncode}:\n{self.log_tail()}")
            try:
                workers = self.workers()
                if len(workers) == count and all(w["is_healthy"] and w["status"] == "ready" for w in workers):
                    return
            except (httpx.HTTPError, ValueError, KeyError):
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"smg did not register {count} workers in 30 s:\n{self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self) -> str:
        self._log.flush()
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-30:])

    def stop(self) -> None:
        # SIGKILL: a graceful stop keeps the listener open 5 s for load balancers to notice the drain,
        # and there is nothing to drain here.
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait(10)
        self._log.close()
