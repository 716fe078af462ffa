"""Builds the configured engine once per process (in the app's lifespan)."""

from __future__ import annotations

from app.inference.engine import Engine
from app.settings import Settings


def build_engine(settings: Settings) -> Engine | None:
    if settings.engine == "off":
        return None
    if settings.engine == "sglang":
        from app.inference.sglang import SGLangEngine

        return SGLangEngine(
            settings.sglang_url,
            api_key=settings.sglang_api_key,
            model=settings.sglang_model,
            profile=settings.sglang_profile,
            incremental=settings.sglang_incremental,
            timeout_s=settings.engine_timeout_s + 5,
        )
    from app.inference.embedded import EmbeddedEngine, default_model_path  # the only kind left: embedded

    return EmbeddedEngine(
        settings.model_path or default_model_path(),
        parallel=settings.engine_parallel,
        threads=settings.engine_threads,
        prefix_cache=settings.engine_prefix_cache,
        speculative=settings.engine_speculative,
        log_level=settings.log_level,
    )
