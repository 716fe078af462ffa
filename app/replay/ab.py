"""A/B of two engine profiles on the same traffic: each profile is the service started with its own
settings, given the same requests at the same times, one profile after the other (never both at
once: they would share the machine), each from the same cache state.

A profile is a set of settings (the README's variables) over the environment, written by hand:
- a file of `KEY=VALUE` lines (`#` comments), labelled by the file's name: `fp8.env`;
- or inline, `LABEL:KEY=VALUE,KEY=VALUE`: `fp8:ENGINE=sglang,SGLANG_URL=http://gpu-b:30000`.
DATABASE_URL is not a profile's: both answer from the same data.

Cache states: `cold` empties the answer cache of the traffic's tenants before each profile starts
(its engine is a fresh process; an SGLang server's prefix cache is flushed with /flush_cache);
`warm` does the same, then has each profile answer the same warm-up requests before it is measured.
The rows in the answer cache when the measured replay starts are recorded per profile, so the report
shows that both started alike.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import httpx
import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data import replay as replay_data
from app.data.database import create_engine
from app.replay.run import Sample, replay
from app.replay.traffic import Arrival
from app.settings import Settings, variables

CacheState = Literal["cold", "warm"]
SECRET_KEYS = frozenset({"SGLANG_API_KEY", "SESSION_SECRET", "METRICS_TOKEN"})
READY_TIMEOUT_S = 180.0  # the embedded engine loads its model before /ready answers


class EngineProfile(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    overrides: dict[str, str]

    @classmethod
    def parse(cls, spec: str) -> EngineProfile:
        """From a file of KEY=VALUE lines or `LABEL:KEY=VALUE,...`; ValueError saying what is wrong."""
        path = Path(spec)
        if path.is_file():
            label = path.stem
            pairs = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
            pairs = [p for p in pairs if p and not p.startswith("#")]
        else:
            label, colon, rest = spec.partition(":")
            if not colon or not label.strip():
                raise ValueError(f"a profile is a file of KEY=VALUE lines or LABEL:KEY=VALUE,... (got {spec!r})")
            pairs = [p.strip() for p in rest.split(",") if p.strip()]
        overrides: dict[str, str] = {}
        known = variables()
        for pair in pairs:
            key, eq, value = pair.partition("=")
            key = key.strip().removeprefix("export ").strip()
            if not eq or key not in known:
                raise ValueError(f"profile {label!r}: {pair!r} is not a setting (KEY=VALUE, a variable of the README)")
            if key == "DATABASE_URL":
                raise ValueError(f"profile {label!r}: DATABASE_URL is not a profile's (both answer from the same data)")
            overrides[key] = value.strip().strip("'\"")
        return cls(label=label.strip(), overrides=overrides)

    def settings(self, environ: dict[str, str]) -> Settings:
        """The settings the profile's service runs with (SettingsError: one it cannot run with)."""
        return Settings.from_env({**environ, **self.overrides})

    def shown(self) -> dict[str, str]:
        """The overrides as a report shows them: secrets hidden."""
        return {k: "***" if k in SECRET_KEYS else v for k, v in self.overrides.items()}


class ProfileRun(msgspec.Struct, frozen=True, kw_only=True):
    """One profile's measured replay, with the state its caches started in."""

    profile: EngineProfile
    engine: str  # embedded | sglang | off
    target: str | None  # the GGUF or the SGLang server
    cache_rows_at_start: int  # answer-cache rows of the traffic's tenants when the measured replay began
    engine_cache: str  # what was done to the engine's prefix cache before the run
    samples: list[Sample]
    reasons: dict[str, str]  # answer id -> its audit row's fallback reason


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def service(database_url: str, overrides: dict[str, str]) -> Iterator[str]:
    """`bill-assistant serve` (one process) with the profile's settings; yields its URL once /ready
    answers 200, stopped (SIGTERM: drained) afterwards."""
    port = _free_port()
    env = {**os.environ, **overrides, "DATABASE_URL": database_url}
    command = [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as reply:
                        if reply.status == 200:
                            break
                except OSError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"the service did not become ready:\n{tail}")
                time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _cache_rows(db: AsyncEngine, slugs: list[str]) -> int:
    async with db.connect() as conn:
        return await replay_data.cache_rows(conn, slugs)


async def _empty_cache(db: AsyncEngine, slugs: list[str]) -> None:
    async with db.begin() as conn:
        await replay_data.empty_cache(conn, slugs)


async def _settled(db: AsyncEngine, slugs: list[str], quiet_s: float = 2.0, timeout_s: float = 120.0) -> None:
    """Until the canonical answers queued by the warm-up are written: no new cache row for quiet_s."""
    deadline = time.monotonic() + timeout_s
    last, since = await _cache_rows(db, slugs), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        if (now := await _cache_rows(db, slugs)) != last:
            last, since = now, time.monotonic()


def _flush_engine(settings: Settings) -> str:
    """An SGLang server outlives the service: its radix cache is emptied; an embedded engine starts
    with the service, empty."""
    if settings.engine.kind != "sglang":
        return "fresh process" if settings.engine.kind == "embedded" else "no engine"
    headers = {"Authorization": f"Bearer {settings.engine.sglang_api_key}"} if settings.engine.sglang_api_key else {}
    try:
        reply = httpx.post(f"{settings.engine.sglang_url.rstrip('/')}/flush_cache", headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        return f"not flushed: {exc}"
    return "flushed" if reply.status_code == 200 else f"not flushed: HTTP {reply.status_code}"


async def _reasons(db: AsyncEngine, samples: Sequence[Sample]) -> dict[str, str]:
    """The fallback reason of each answer the run got (its audit row; a cache hit's id is the
    canonical answer's, which has none)."""
    ids = [str(s.answer["answer_id"]) for s in samples if s.answer and s.answer.get("source") == "fallback"]
    async with db.connect() as conn:
        return await replay_data.fallback_reasons(conn, ids)


async def run_profile(
    profile: EngineProfile,
    arrivals: Sequence[Arrival],
    keys: dict[str, str],
    *,
    database_url: str,
    cache: CacheState,
    warmup: Sequence[Arrival],
    speed: float,
    on_done: Callable[[Sample], None] = lambda sample: None,
) -> ProfileRun:
    """One profile: caches emptied, the service started, warmed if asked, the traffic replayed."""
    settings = profile.settings(dict(os.environ))
    slugs = sorted({a.tenant for a in [*arrivals, *warmup]})
    db = create_engine(database_url)
    try:
        await _empty_cache(db, slugs)
        engine_cache = _flush_engine(settings)
        with service(database_url, profile.overrides) as url:  # waits for /ready: nothing else runs yet
            if cache == "warm":
                await replay(warmup, url, keys, speed=speed)
                await _settled(db, slugs)
            rows = await _cache_rows(db, slugs)
            samples = await replay(arrivals, url, keys, speed=speed, on_done=on_done)
        reasons = await _reasons(db, samples)
    finally:
        await db.dispose()
    target = settings.engine.sglang_url if settings.engine.kind == "sglang" else settings.engine.model_path
    return ProfileRun(
        profile=profile,
        engine=settings.engine.kind,
        target=target if settings.engine.kind != "off" else None,
        cache_rows_at_start=rows,
        engine_cache=engine_cache,
        samples=sorted(samples, key=lambda s: s.seq),
        reasons=reasons,
    )
