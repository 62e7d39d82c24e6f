"""Announcements shared by the tests and the benchmarks (bench/e2e/phases.py), and the
packaged evaluation corpus both speak."""

from __future__ import annotations

from importlib.resources import files


def evaluation_lines() -> list[str]:
    """The English evaluation corpus (edge_tts/voice/data/evaluation_en.txt), one
    announcement a line."""
    text = files("edge_tts.voice").joinpath("data", "evaluation_en.txt").read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


# Long first sentences, several chunks each: the clause splitter must keep the first chunk
# short, and pre-rendering them keeps the pre-renderer busy for a while.
LONG_TEXTS = (
    "The washing machine in the basement has finished its cycle, the dryer will start in "
    "ten minutes, and the laundry room lights will switch off automatically afterwards.",
    "Please remember to take your keys, close the garage door, switch off the lights in "
    "the kitchen and lock the back door before you leave for the airport this afternoon.",
    "Motion was detected in the backyard near the shed at eleven forty-two PM, and the "
    "camera recorded a short clip that you can review in the app when you have a moment.",
    "The temperature in the living room has dropped to seventeen degrees Celsius, so the "
    "heating will switch on now and run until the room reaches twenty-one degrees again.",
)
