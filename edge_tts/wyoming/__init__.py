"""A Wyoming TTS server, so Home Assistant Assist (or any Wyoming client) can use this
device's voices; the audio goes back to the client and is not played here.

server.py      the part: listening, the connection limit, start and stop
connection.py  one client: its events in, its requests opened as responses (asyncio)
sender.py      what goes back to it: events, and each response's audio as it is made
context.py     what every connection of one server shares
protocol.py    reading events within bounds; the errors a client is answered with
sentences.py   streamed text into complete sentences
info.py        the answer to `describe`: every configured voice
"""

from ..core.telemetry import Door, Figures
from .server import WyomingServer

FIGURES = Figures(
    counters=(
        "wyoming_requests",  # responses the Wyoming server started
        "wyoming_errors",  # Wyoming clients answered with an error, or dropped
    ),
    doors=(Door("wyoming"),),
)

__all__ = ["FIGURES", "WyomingServer"]
