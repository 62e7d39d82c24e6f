"""The speech engine every front door submits to.

A door has two ways in, by where the audio goes: a request played on this device's
speaker becomes a `Job` submitted to the pipeline (`Pipeline.submit`: MQTT, Hermes,
`edge-ttsd say`, HTTP /say), and audio for a client that plays it elsewhere is a
`Response` opened on the engine's responses (`Responses.open`: Wyoming, HTTP). Both are
planned by the same router and text front-end, rendered through the same phrase cache,
run on the same synthesis workers in the order schedule.py states, and counted in the
same telemetry, by door.

jobs.py       a request on its way: the Job, its chunks, the tasks it makes
schedule.py   the task classes in order; which request plays next, which synthesis runs
pipeline.py   requests → synthesis workers → one speaker
playback.py   the playback thread: one job at a time, highest priority first
responses.py  audio for clients of remote doors, a step at a time, taking turns
routing.py    which voice speaks which part of a text, by writing system
synthesis.py  text → audio: front-end chunks, phoneme ids, the voice's pieces
direct.py     text → audio in the calling thread, along a request's path (tune, tests)
dedupe.py     which requests were already played, across restarts
readout.py    `edge-ttsd explain`: how a text is read, chunk by chunk, without synthesis
"""

from ..core.telemetry import Figures

# The requests' fates, whichever door they came in by; `underruns` is the speaker's total.
FIGURES = Figures(
    counters=(
        "received",
        "played",
        "rejected",
        "expired",
        "interrupted",
        "errors",
        "underruns",
        "duplicates",
        "deferred",
    )
)
