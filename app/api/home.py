"""GET /: where a newcomer lands (the address `run` prints first): the demo, the console and the
API docs. GET /favicon.ico: the one icon every page's browser asks for."""

from __future__ import annotations

from litestar import Response, get
from litestar.di import NamedDependency
from litestar.response import Template

from app.api.console.pages import SECURITY_HEADERS
from app.api.console.words import page_context
from app.settings import PROJECT_ROOT, Settings

FAVICON = (PROJECT_ROOT / "app" / "web" / "static" / "favicon.svg").read_bytes()


@get("/", include_in_schema=False, sync_to_thread=False)
def home(settings: NamedDependency[Settings]) -> Template:
    """Links only: the demo (when on), the console, the API reference; in the console's language, under
    its pages' CSP."""
    return Template("home.html", context=page_context() | {"demo": settings.demo.page}, headers=SECURITY_HEADERS)


@get("/favicon.ico", include_in_schema=False, sync_to_thread=False)
def favicon() -> Response[bytes]:
    """An SVG under the name browsers ask for unprompted: every page, the JSON API's too, gets it."""
    return Response(FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})
