"""The model checker: a model's verified bytes checked (self-contained ONNX) and cut at
the decoder (decoder_cut.py), its graph rewritten first for what onnxruntime's CPU kernels
run best (`compact_encoder`, `compact_decoder`), in a child process,
`python -m edge_tts.voice.model_check`.

The child gets the bytes on stdin, not the path, so what it checks and cuts is what was
hashed. Doing this in a child keeps onnx (12 MB of imports) and the parsed graph out of
the daemon: its memory goes back to the system when the child exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .decoder_cut import SplitModel, split_at_decoder
from .integrity import ModelIntegrityError, parse_self_contained
from .kernels import nchwc_convolutions

if TYPE_CHECKING:
    import onnx

EXIT_REFUSED = 78  # the child's exit status for a model that must not be loaded
SPLIT_TIMEOUT_S = 300
MAX_HEADER_BYTES = 64 * 1024  # the answer's first line: names and sizes, a few hundred bytes


def check_self_contained(path: Path, data: bytes) -> None:
    """Check a model's verified bytes are self-contained ONNX, in a child process (see
    `check_and_split`), for graphs that are not cut (a two-stage voice's)."""
    run_child(path, data, "--check-only")


def check_and_split(path: Path, data: bytes) -> SplitModel | None:
    """Check a model's verified bytes (self-contained ONNX) and cut it, in a child process;
    None for a graph that is not cut (decoded whole sentences at a time)."""
    answer = run_child(path, data)
    assert not isinstance(answer, int)
    return answer


Answer = SplitModel | int | None  # halves, a receptive field, or nothing to say


def run_child(
    path: Path,
    data: bytes,
    *flags: str,
    module: str = "edge_tts.voice.model_check",
    read: Callable[[IO[bytes]], Answer] | None = None,
) -> Answer:
    """`module` run as a child with `-m` on the bytes: its answer (`read` from its stdout;
    by default the halves, each part read from the pipe straight into its own bytes). Read
    whole and then cut (subprocess.run's output, a partition, a slice per part) the answer
    was in memory four times at once beside `data`: +250 MB of peak RSS for the 63 MB FP32
    model, the pre-renderer's load (docs/benchmarks.md, Phrase cache)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, str(path), *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        proc.kill()

    timer = threading.Timer(SPLIT_TIMEOUT_S, expire)
    timer.start()
    try:
        halves, unreadable, error = _exchange(proc, data, read or _read_answer)
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    if proc.returncode == EXIT_REFUSED:
        raise ModelIntegrityError(error.splitlines()[-1] if error else f"{path} refused")
    if expired.is_set():
        raise ModelIntegrityError(f"could not check {path}: no answer in {SPLIT_TIMEOUT_S} s")
    if proc.returncode != 0:
        raise ModelIntegrityError(f"could not check {path} (exit {proc.returncode}): {error}")
    if unreadable is not None:
        raise ModelIntegrityError(f"could not check {path}: {unreadable}") from unreadable
    return halves


def _exchange(
    proc: subprocess.Popen[bytes], data: bytes, read: Callable[[IO[bytes]], Answer]
) -> tuple[Answer, Exception | None, str]:
    """Model bytes in, (halves, why the answer was unreadable, stderr) out. The child reads
    all of stdin before it writes, so writing it all first cannot block on a full stdout;
    stderr is drained in a thread, so a child that says much there cannot block either."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stderr, said = proc.stderr, bytearray()
    drain = threading.Thread(target=lambda: said.extend(stderr.read()), daemon=True)
    drain.start()
    # A child that died early closes the pipe: its exit status says why.
    with contextlib.suppress(BrokenPipeError), proc.stdin:
        proc.stdin.write(data)
    halves: Answer = None
    unreadable: Exception | None = None
    with proc.stdout:
        try:
            halves = read(proc.stdout)
        except (ValueError, KeyError, TypeError, ModelIntegrityError) as err:
            unreadable = err
    proc.wait()  # stderr ends when the child does
    drain.join()
    stderr.close()
    return halves, unreadable, said.decode("utf-8", "replace").strip()


def _encode(halves: SplitModel | None) -> Iterator[bytes]:
    """The child's answer in pieces (a header line, then the parts), written one by one:
    joined, the child would hold the model twice more."""
    if halves is None:
        yield b"null\n"
        return
    header = {
        "stage_inputs": list(halves.stage_inputs),
        "channels": halves.channels,
        "decoder_inputs": list(halves.decoder_inputs),
        "sizes": [len(blob) for blob in (halves.encoder, *halves.decoder)],
    }
    yield json.dumps(header).encode() + b"\n"
    yield halves.encoder
    yield from halves.decoder


def _read_answer(stream: IO[bytes]) -> SplitModel | None:
    """The child's answer from its stdout, each part read into one bytes of its size."""
    header = json.loads(stream.readline(MAX_HEADER_BYTES))
    if header is None:
        return None
    parts = []
    for size in (int(size) for size in header["sizes"]):
        part = stream.read(size)
        if len(part) != size:
            raise ModelIntegrityError("the model checker's output is truncated")
        parts.append(part)
    if stream.read(1):
        raise ModelIntegrityError("the model checker's output is longer than it says")
    return SplitModel(
        encoder=parts[0],
        decoder=tuple(parts[1:]),
        stage_inputs=tuple(str(name) for name in header["stage_inputs"]),
        channels=int(header["channels"]),
        decoder_inputs=tuple(str(name) for name in header["decoder_inputs"]),
    )


def compact_encoder(model: onnx.ModelProto) -> dict[str, int]:
    """The load-time rewrites of a VITS voice's encoder half, before the cut (each leaves
    alone what it does not recognize): how many splines, attention layers, layer norms and
    additions of zeros. The same values, ~1,400 fewer nodes per encoder run than exported
    (docs/benchmarks.md)."""
    from . import attention, layer_norms, splines, zero_adds  # onnx: in the child only

    return {
        "splines": splines.compact_splines(model),
        "attention": attention.compact_attention(model),
        "layer_norms": layer_norms.fuse_layer_norms(model),
        "zero_adds": zero_adds.drop_zero_adds(model),
    }


def compact_decoder(model: onnx.ModelProto, nchwc: bool) -> dict[str, int]:
    """The load-time rewrites of HiFi-GAN, before the cut: its float upsamplings as
    polyphase Convs and its float Convs as 2-D, both for onnxruntime's NCHWc kernels (the
    same values; docs/benchmarks.md). Where it has none (`nchwc`: kernels.py), the decoder
    stays as exported."""
    if not nchwc:
        return {"polyphase": 0, "conv2d": 0}
    from . import conv2d, polyphase  # onnx: in the child only

    return {
        "polyphase": len(polyphase.rewrite_conv_transposes(model, (conv2d.DECODER,))),
        "conv2d": conv2d.decoder_convs_as_2d(model),
    }


def _main(argv: list[str]) -> int:
    """Child side of `check_and_split`: model bytes on stdin, halves (or null) on stdout."""
    path = Path(argv[0]) if argv else Path("<stdin>")
    data = sys.stdin.buffer.read()
    try:
        model = parse_self_contained(path, data)
    except ModelIntegrityError as err:
        print(err, file=sys.stderr)
        return EXIT_REFUSED
    del data
    cut = "--check-only" not in argv
    if cut:
        compact_encoder(model)
        compact_decoder(model, nchwc_convolutions())
    for piece in _encode(split_at_decoder(model) if cut else None):
        sys.stdout.buffer.write(piece)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sys.exit(_main(sys.argv[1:]))
