"""Builds the configured engine once per process (in the app's lifespan)."""

from __future__ import annotations

from app.inference.engine import Engine
from app.settings import Settings


def build_engine(settings: Settings) -> Engine | None:
    if settings.engine.kind == "off":
        return None
    if settings.engine.kind == "sglang":
        from app.inference.sglang import SGLangEngine

        return SGLangEngine(
            settings.engine.sglang_url,
            api_key=settings.engine.sglang_api_key,
            model=settings.engine.sglang_model,
            profile=settings.engine.sglang_profile,
            incremental=settings.engine.sglang_incremental,
            timeout_s=settings.engine.timeout_s + 5,
        )
    from app.inference.embedded import EmbeddedEngine, default_model_path  # the only kind left: embedded

    return EmbeddedEngine(
        settings.engine.model_path or default_model_path(),
        parallel=settings.engine.parallel,
        threads=settings.engine.threads,
        prefix_cache=settings.engine.prefix_cache,
        speculative=settings.engine.speculative,
        log_level=settings.logs.level,
    )
