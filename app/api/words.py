"""What the chat widget says, in every locale the service speaks (each locale's folder,
app/locales.py): GET /v1/chat/words (JSON, for any client) and GET /v1/chat/words.js (the same as a
script, which the widget loads: a script needs no CORS, so a bank's page whose origin the service
does not allow still hears, in its customer's language, that the widget cannot reach the service).
The widget reads them once, before it draws anything, and speaks a conversation's language from
then on: the page's at first, the answer's once one comes."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import get
from litestar.response import Response

from app import locales

# The words change only with a deployment; a page's widgets share one copy for a few minutes.
CACHE_CONTROL = "public, max-age=300"


def widget_words() -> dict[str, Any]:
    """Each locale's widget strings, with the language a question in it is detected as."""
    return {
        "default": locales.default(),
        "locales": {
            name: {"language": locales.data(name).language, "words": locales.words(name)["widget"]}
            for name in locales.locales()
        },
    }


@get("/v1/chat/words", summary="What the chat widget says, in every locale", tags=["chat"], sync_to_thread=False)
def words() -> Response[dict[str, Any]]:
    return Response(widget_words(), headers={"Cache-Control": CACHE_CONTROL})


@get("/v1/chat/words.js", include_in_schema=False, sync_to_thread=False)
def words_script() -> Response[bytes]:
    """The words as a script that hands them to the widget which loaded it (its script element)."""
    body = b"window.BillAssistant.words(document.currentScript, " + msgspec.json.encode(widget_words()) + b");\n"
    headers = {"Cache-Control": CACHE_CONTROL, "X-Content-Type-Options": "nosniff"}
    return Response(body, media_type="text/javascript; charset=utf-8", headers=headers)
