"""The daemon end to end: a real Mosquitto, the daemon subprocess, a real-time sound card.

    python -m bench.daemon_e2e --quick                 # a few minutes
    python -m bench.daemon_e2e                         # full (quiet machine)
    python -m bench.daemon_e2e --quick --investigate   # + TTFA breakdown and knob sweep
    python -m bench.daemon_e2e --only sequential,length --json
    python -m bench.daemon_e2e --quick --only length,burst2 \
        --set synthesis.max_concurrent=1 --set audio.block_frames=256 --latency 0.03
    python -m bench.daemon_e2e --quick --only none --rss-knobs   # only the memory knobs

Mosquitto on a free port (tests/support/broker.py), the daemon as `python -m edge_tts run
--config F [--set K=V ...]` with a fake NOTIFY_SOCKET (bench/daemon_rig.py's launcher, on
tests/support/daemon_proc.py; preload on, the default voice, which resolves to our INT8
build: EDGE_TTS_DATA_DIR points at this user's data directory, and the voice's digest
from the daemon's telemetry is checked against the INT8 manifest), and PulseAudio with a
pipe sink paced by the system clock (tests/support/soundcard.py) as ALSA's default. The
parts are in bench/e2e/: rig.py (broker, sound cards, daemons, events), knobs.py (daemon
configurations, the sweeps), phases.py, investigate.py, figures.py (targets and tables),
shim.py.

Phases (--only picks some; `--only none` runs none, for --investigate / --rss-knobs alone):

  sequential  corpus lines, one publisher: publish, wait for `finished`, settle, next
  length      short vs long sentences, interleaved, one publisher (same daemon)
  burst2      two publishers publish at the same moment, repeatedly (same daemon)
  burst100    100 requests at once with queue.size 128, then with the default 32; on the
              sound card at speed 2 (--quick: the wav-dir sink, not paced)
  rss         RSS of the daemon (psutil) across 1000 requests sampled every 100
              (--quick: 200, every 50): wav-dir sink (not paced by a clock, so it is
              quick), short texts, published a sample's worth at a time

--set KEY=VALUE is passed to the phases' daemons as `edge-ttsd run --set` (it wins over
the phase's own config, e.g. queue.size); --latency (PortAudio latency: audio.latency_ms)
applies to them too. Neither applies to the sweeps of --investigate and --rss-knobs.

Time to first audio (TTFA) "sound out" = publish -> first non-silent block out of the
sound server (VirtualSoundCard.first_sound_time: the time the FIFO reader got the block).
The pipe sink emits 2048-frame blocks (93 ms at 22.05 kHz mono) in real time, so the
"sample-accurate" figure adds the loud sample's offset inside its block. The daemon's own
`time_to_first_audio_ms` (message received -> first sample handed to ALSA) is shown next
to it.

--investigate breaks every request's TTFA down from public surfaces only (the `queued`
event's `ts`: received; the `finished` event's `stages_ms`: planned, first chunk's
synthesis started, its first audio ready, first audio written to the output, and
`time_to_first_audio_ms`: first sample handed to ALSA; the capture: the voice's lead-in
before the onset) and sweeps audio.latency_ms, audio.block_frames,
synthesis.first_chunk_chars and max_concurrent, the pipe sink's sample format,
PULSE_LATENCY_MSEC and LOOKAHEAD_CHUNKS (SWEEP; --sweep picks some). --rss-knobs repeats
the RSS phase per memory knob (RSS_SWEEP). LOOKAHEAD_CHUNKS and onnxruntime's
enable_mem_pattern are no settings: bench/e2e/shim.py sets those module attributes
before `edge-ttsd run` starts; the other sink format is the test card's pa.pa rewritten
before PulseAudio starts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.daemon_rig import add_daemon_options
from bench.e2e.figures import print_report, targets
from bench.e2e.investigate import investigate
from bench.e2e.knobs import RSS_SWEEP, Knobs
from bench.e2e.phases import (
    SHORT_TEXTS,
    phase_burst2,
    phase_burst100,
    phase_length,
    phase_rss,
    phase_sequential,
)
from bench.e2e.rig import Rig
from bench.report_io import log, machine_info, run_and_emit
from tests.support.texts import evaluation_lines

PHASES = ("sequential", "length", "burst2", "burst100", "rss")


def run(args: argparse.Namespace) -> dict[str, Any]:
    phases = set(args.only.split(",")) if args.only else set(PHASES)
    corpus = evaluation_lines()
    q = args.quick
    load_before = os.getloadavg()
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="ttsdb-"))  # short: unix socket paths are limited
    result: dict[str, Any] = {"benchmark": "daemon_e2e", "quick": q, "root": str(root)}
    result["overrides"] = {"latency_s": args.latency, "set": args.set}
    rig = Rig(root)
    main = Knobs("main", latency=args.latency)  # the phases' daemons (not the sweeps')
    try:
        if phases & {"sequential", "length", "burst2"}:
            log("daemon: defaults (alsa sink, queue 32)")
            with rig.daemon(main, args.set) as d:
                d.speak("Ready.", "warm")  # the stream's first utterance is not measured
                if "sequential" in phases:
                    texts = corpus[:5] if q else corpus
                    result["sequential"] = phase_sequential(d, texts, 1 if q else 3)
                if "length" in phases:
                    result["length"] = phase_length(d, 1 if q else 4, 3 if q else 4)
                if "burst2" in phases:
                    result["burst2"] = phase_burst2(d, corpus, 4 if q else 30)
        if "burst100" in phases:
            for key, size in (("burst100_q128", 128), ("burst100_q32", None)):
                result[key] = burst100(rig, main, args, size, root / "burst-wav")
        total = args.rss_requests or (200 if q else 1000)
        every = 50 if q else 100
        wav = {"sink": "wav-dir", "wav_dir": str(root / "rss-wav")}
        if "rss" in phases:
            log(f"RSS over {total} requests (wav-dir)")
            with rig.daemon(main, args.set, queue={"size": 128}, audio=wav) as d:
                result["rss"] = phase_rss(d, root / "rss-wav", total, every)
        if args.rss_knobs:
            result["rss_knobs"] = []
            for knobs in RSS_SWEEP:
                log(f"RSS over {total} requests: {knobs.name}")
                with rig.daemon(knobs, queue={"size": 128}, audio=wav) as d:
                    r = phase_rss(d, root / "rss-wav", total, every)
                    r.update(name=knobs.name, knobs=knobs.describe())
                    result["rss_knobs"].append(r)
        if args.investigate:
            short = [t for t in corpus if len(t) <= 45] + list(SHORT_TEXTS)
            only = args.sweep.split(",") if args.sweep else None
            result["investigation"] = investigate(rig, short, 4, 1 if q else 3, only)
    finally:
        rig.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    result["voice"] = rig.voice
    result["machine"] = machine_info(load_before)
    result["elapsed_s"] = round(time.monotonic() - started, 1)
    result["targets"] = targets(result)
    return result


def burst100(
    rig: Rig, main: Knobs, args: argparse.Namespace, size: int | None, wav_dir: Path
) -> dict[str, Any]:
    """The big burst with queue.size `size` (None: the default, 32); --quick: on the
    wav-dir sink (not paced), else on the sound card at speed 2."""
    q = args.quick
    queue = {"size": size} if size else {}
    sink = {"sink": "wav-dir", "wav_dir": str(wav_dir)} if q else {}
    log(f"burst of {args.burst}: queue {size or 'default (32)'}, sink {'wav-dir' if q else 'alsa'}")
    with rig.daemon(main, args.set, queue=queue, audio=sink) as d:
        b = phase_burst100(d, args.burst, None if q else 2.0)
    b["sink"] = "wav-dir" if q else "alsa, speed 2"
    b["queue_size"] = size or 32
    return b


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="short run (a few minutes)")
    add("--only", help=f"comma-separated phases: {','.join(PHASES)}")
    add("--investigate", action="store_true", help="TTFA breakdown + knobs")
    add("--sweep", help="--investigate only these configs (names, comma-separated)")
    add("--rss-knobs", action="store_true", help="RSS run again per memory knob (RSS_SWEEP)")
    add(
        "--latency",
        type=float,
        help="PortAudio latency (s) for the phases' daemons (audio.latency_ms)",
    )
    add("--burst", type=int, default=100, help="requests in the big burst")
    add("--rss-requests", type=int, help="requests for the RSS run")
    add_daemon_options(parser)  # --set: the phases' daemons only
    args = parser.parse_args(argv)
    return run_and_emit(run, args, print_report)


if __name__ == "__main__":
    sys.exit(main())
