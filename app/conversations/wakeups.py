"""In-process signals: a message was added to conversation X. A write in this process wakes the live
feeds waiting on it at once; another replica's is found by the feed's next poll."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict


class Wakeups:
    def __init__(self) -> None:
        self._events: dict[uuid.UUID, set[asyncio.Event]] = defaultdict(set)

    def wake(self, conversation_id: uuid.UUID) -> None:
        for event in self._events.get(conversation_id, ()):
            event.set()

    async def wait(self, conversation_id: uuid.UUID, timeout_s: float) -> None:
        event = asyncio.Event()
        waiting = self._events[conversation_id]
        waiting.add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            waiting.discard(event)
            if not waiting:
                self._events.pop(conversation_id, None)
