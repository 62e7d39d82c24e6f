"""What every connection of one server shares: apart from connection.py, because the
sender (sender.py) reads it too and connection.py imports the sender."""

from __future__ import annotations

from dataclasses import dataclass

from wyoming.event import Event

from ..core.telemetry import Telemetry
from ..speech.responses import Responses


@dataclass(frozen=True)
class Context:
    """What every connection of one server shares."""

    responses: Responses
    telemetry: Telemetry
    info: Event  # the answer to describe
    max_text_chars: int
    max_data: int  # protocol.data_limit
    idle_timeout: float
    lead_in_ms: int
