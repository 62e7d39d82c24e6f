"""`edge-ttsd` with the two knobs no setting reaches, for bench/daemon_e2e.py's sweeps:
`python -m bench.e2e.shim run --config F [--set K=V ...]`, with EDGE_TTS_BENCH_SHIM =
{"lookahead": N | null, "mem_pattern": bool | null} in the environment.

It sets public module attributes before the daemon starts, and nothing else:
`edge_tts.speech.schedule.LOOKAHEAD_CHUNKS` (read at every scheduling decision) and
`edge_tts.voice.model.session_options` (called for every session the daemon opens).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

SHIM_ENV = "EDGE_TTS_BENCH_SHIM"


def main() -> int:
    opts: dict[str, Any] = json.loads(os.environ.get(SHIM_ENV, "{}"))
    from edge_tts import cli
    from edge_tts.speech import schedule
    from edge_tts.voice import model

    if opts.get("lookahead") is not None:
        schedule.LOOKAHEAD_CHUNKS = int(opts["lookahead"])
    if opts.get("mem_pattern") is not None:
        plain_options = model.session_options

        def session_options(threads: int, nchwc: bool = True) -> Any:
            options = plain_options(threads, nchwc)
            options.enable_mem_pattern = bool(opts["mem_pattern"])
            return options

        model.session_options = session_options
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
