"""Server-Sent Events: one SSE message per stored event, with its position in the stream as its id, so a reconnect
resumes (web/runs.py numbers the events the same way on every node)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request

from engine.result import StoredEvent


def last_event_id(request: Request) -> int:
    """The number of the last event a reconnecting EventSource saw (-1: start from the first)."""
    try:
        return int(request.headers.get("last-event-id", "-1"))
    except ValueError:
        return -1


def json_message(number: int, event: StoredEvent) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(event["data"], ensure_ascii=False), event=event["type"], id=str(number))


Item = TypeVar("Item")


def respond(
    events: AsyncIterator[tuple[int, Item]],
    render: Callable[[int, Item], list[ServerSentEvent]],
) -> EventSourceResponse:
    async def messages() -> AsyncIterator[ServerSentEvent]:
        async for number, event in events:
            for message in render(number, event):
                yield message

    # no-cache and no buffering by proxies: each event must reach the reader when it happens
    return EventSourceResponse(messages(), headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}, ping=15)
