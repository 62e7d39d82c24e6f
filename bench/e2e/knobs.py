"""Daemon configurations: the settings a phase's daemon gets, and the knob sweeps of
--investigate (TTFA) and --rss-knobs (memory)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support.daemon_proc import merge_sections

RATE = 22050


@dataclass(frozen=True)
class Knobs:
    """One daemon configuration; None means the daemon's own default."""

    name: str
    latency: float | None = None  # s; audio.latency_ms (default 50 ms)
    block_frames: int | None = None  # audio.block_frames (default 512)
    first_chunk_chars: int | None = None  # synthesis.first_chunk_chars (default 40)
    sink_rate: int = RATE  # the pipe sink's format: 4096-byte blocks whatever the format
    sink_channels: int = 1
    pulse_latency_msec: int | None = None  # PULSE_LATENCY_MSEC for the daemon (libpulse)
    max_concurrent: int | None = None  # synthesis.max_concurrent (default 2)
    lookahead: int | None = None  # edge_tts.speech.schedule.LOOKAHEAD_CHUNKS (a constant: shim)
    mem_pattern: bool | None = None  # onnxruntime SessionOptions.enable_mem_pattern (shim)

    @property
    def needs_shim(self) -> bool:
        return any(v is not None for v in (self.lookahead, self.mem_pattern))

    def settings(self, device: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """The daemon's settings (over the launcher's: bench/daemon_rig.py): these knobs,
        then `overrides` (whole sections merged key by key)."""
        settings: dict[str, Any] = {
            "device_id": device,
            "telemetry": {"interval": 2},
            "synthesis": {},
            "audio": {},
            # These phases measure synthesis, and repeat their texts: with the phrase cache
            # the repeats would be hits (bench/cache.py measures the cache).
            "cache": {"enabled": False},
        }
        if self.block_frames is not None:
            settings["audio"]["block_frames"] = self.block_frames
        if self.latency is not None:
            settings["audio"]["latency_ms"] = round(self.latency * 1000)
        if self.first_chunk_chars is not None:
            settings["synthesis"]["first_chunk_chars"] = self.first_chunk_chars
        if self.max_concurrent is not None:
            settings["synthesis"]["max_concurrent"] = self.max_concurrent
        return merge_sections(settings, overrides)

    def describe(self) -> str:
        parts = []
        if self.latency is not None:
            parts.append(f"PortAudio latency {self.latency * 1000:.0f} ms")
        if self.block_frames is not None:
            parts.append(f"block_frames {self.block_frames}")
        if self.first_chunk_chars is not None:
            parts.append(f"first_chunk_chars {self.first_chunk_chars}")
        if (self.sink_rate, self.sink_channels) != (RATE, 1):
            block_ms = 4096 / (2 * self.sink_channels * self.sink_rate) * 1000
            parts.append(
                f"pipe sink {self.sink_rate} Hz x{self.sink_channels} ({block_ms:.0f} ms blocks)"
            )
        if self.pulse_latency_msec is not None:
            parts.append(f"PULSE_LATENCY_MSEC={self.pulse_latency_msec}")
        if self.max_concurrent is not None:
            parts.append(f"max_concurrent {self.max_concurrent}")
        if self.lookahead is not None:
            parts.append(f"LOOKAHEAD_CHUNKS {self.lookahead}")
        if self.mem_pattern is not None:
            parts.append(f"enable_mem_pattern {self.mem_pattern}")
        return ", ".join(parts) or (
            "defaults: latency 50 ms, block 512, first chunk 40, 2 workers, lookahead 2"
        )


_OUTPUT_KNOBS: dict[str, Any] = {
    "latency": 0.03,
    "block_frames": 256,
    "sink_rate": 48000,
    "sink_channels": 2,
    "pulse_latency_msec": 20,
}
SWEEP = (
    Knobs("baseline"),
    # the output path
    Knobs("latency 30 ms", latency=0.03),
    Knobs("block 256", block_frames=256),
    Knobs("latency 30 ms + block 256", latency=0.03, block_frames=256),
    Knobs("sink 48 kHz stereo (21 ms blocks)", sink_rate=48000, sink_channels=2),
    Knobs("PULSE_LATENCY_MSEC=20 + block 256", pulse_latency_msec=20, block_frames=256),
    Knobs("all output knobs", **_OUTPUT_KNOBS),
    # the first chunk's synthesis
    Knobs("max_concurrent 1", max_concurrent=1),
    Knobs("lookahead 1 (shim)", lookahead=1),
    Knobs("first chunk 30", first_chunk_chars=30),
    Knobs("first chunk 30 + max_concurrent 1", first_chunk_chars=30, max_concurrent=1),
    # everything
    Knobs("output + max_concurrent 1", max_concurrent=1, **_OUTPUT_KNOBS),
    Knobs(
        "output + max_conc. 1 + first chunk 30",
        max_concurrent=1,
        first_chunk_chars=30,
        **_OUTPUT_KNOBS,
    ),
)

# The daemon turns onnxruntime's memory patterns off (voice/model.py): "on" is the knob.
RSS_SWEEP = (
    Knobs("defaults"),
    Knobs("enable_mem_pattern on (shim)", mem_pattern=True),
    Knobs("max_concurrent 1", max_concurrent=1),
    Knobs("mem_pattern on + max_concurrent 1", mem_pattern=True, max_concurrent=1),
)
