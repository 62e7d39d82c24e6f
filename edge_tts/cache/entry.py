"""One cache entry on disk: a chunk's float32 audio, what it is, and a checksum.

Layout: MAGIC (8 bytes), a BLAKE2b-128 digest of everything after it (16), the header's
length (4, little-endian), the header (UTF-8 JSON: key, voice and build digests, sample
rate, sample count, text), then the samples (float32, little-endian). A file cut short,
a flipped bit or another file under the name fails `decode` and is never played.

Stored is the voice's own output at its rate, before leading-silence trim, pause gate,
resampling, volume and int16: a hit then goes through exactly the steps a synthesized
chunk does (synthesis.render), and float32 keeps it bit-exact (4 bytes a sample: 88 kB a
second at 22.05 kHz).
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass

import numpy as np

from .key import ChunkKey

MAGIC = b"ETTSPC01"
_DIGEST_BYTES = 16
_LENGTH = struct.Struct("<I")
_SAMPLE = np.dtype("<f4")


class CorruptEntry(ValueError):
    """The bytes are not an intact entry for the key asked for; the reason says how."""


@dataclass(frozen=True)
class Entry:
    key: ChunkKey
    audio: np.ndarray  # float32, mono, at key.sample_rate


def encode(key: ChunkKey, audio: np.ndarray) -> bytes:
    samples = np.ascontiguousarray(audio, dtype=_SAMPLE).reshape(-1)
    header = {
        "key": key.digest,
        "voice": key.voice_sha256,
        "build": key.build_sha256,
        "rate": key.sample_rate,
        "samples": int(samples.size),
        "text": key.text,
    }
    head = json.dumps(header, ensure_ascii=False).encode("utf-8")
    body = _LENGTH.pack(len(head)) + head + samples.tobytes()
    return MAGIC + _checksum(body) + body


def decode(data: bytes, key: ChunkKey) -> Entry:
    """The entry in `data`, checked against its checksum and `key`; CorruptEntry else."""
    header, audio = read(data)
    if header.get("key") != key.digest or header.get("rate") != key.sample_rate:
        raise CorruptEntry("an entry for another chunk")  # a file renamed or copied by hand
    return Entry(key, audio)


def read(data: bytes) -> tuple[dict[str, object], np.ndarray]:
    """An entry's header and audio, checked against its checksum (for any key: tools and
    tests); CorruptEntry when damaged."""
    start = len(MAGIC) + _DIGEST_BYTES
    if len(data) < start + _LENGTH.size or not data.startswith(MAGIC):
        raise CorruptEntry("not a cache entry, or cut short")
    body = memoryview(data)[start:]
    if _checksum(body) != data[len(MAGIC) : start]:
        raise CorruptEntry("checksum mismatch")
    (length,) = _LENGTH.unpack_from(body)
    header = json.loads(bytes(body[_LENGTH.size : _LENGTH.size + length]))
    if not isinstance(header, dict):
        raise CorruptEntry("its header is not a mapping")
    audio = np.frombuffer(body[_LENGTH.size + length :], dtype=_SAMPLE)
    if audio.size != header.get("samples"):
        raise CorruptEntry("sample count does not match its header")
    return header, audio.astype(np.float32)


def _checksum(data: bytes | memoryview) -> bytes:
    # BLAKE2b: a real hash at several hundred MB/s (an entry checks in well under a
    # millisecond), where a CRC could miss a torn multi-block write pattern.
    return hashlib.blake2b(data, digest_size=_DIGEST_BYTES).digest()
