"""The phrase cache's disk store: entries, checksum, atomic writes, LRU, faults."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from edge_tts.cache.entry import MAGIC, CorruptEntry, decode, encode
from edge_tts.cache.key import ChunkKey
from edge_tts.cache.store import CacheStore

pytestmark = pytest.mark.unit


def key(n: int, rate: int = 22050) -> ChunkKey:
    return ChunkKey(f"{n:040x}", "a" * 64, "b" * 64, f"Chunk number {n}.", rate)


def audio(n: int, samples: int = 1000) -> np.ndarray:
    rng = np.random.default_rng(n)
    return rng.uniform(-0.5, 0.5, samples).astype(np.float32)


def entry_bytes(samples: int = 1000) -> int:
    return len(encode(key(0), audio(0, samples)))


def store_of(tmp_path: Path, entries: int, **kw: object) -> CacheStore:
    """A store with room for `entries` entries of 1000 samples."""
    store = CacheStore(tmp_path / "cache", entries * entry_bytes(), **kw)  # type: ignore[arg-type]
    store.open()
    return store


def test_an_entry_round_trips_bit_exact(tmp_path: Path) -> None:
    store = store_of(tmp_path, 4)
    assert store.put(key(1), audio(1))
    got = store.get(key(1))
    assert got is not None and got.audio.dtype == np.float32
    assert np.array_equal(got.audio, audio(1))
    assert store.get(key(2)) is None


def test_entries_survive_a_restart_in_their_recency_order(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    for n in (1, 2, 3):
        assert store.put(key(n), audio(n))
    for n, when in ((1, 300), (2, 100), (3, 200)):  # as touched by hits: 2, then 3, then 1
        os.utime(tmp_path / "cache" / f"{key(n).digest}.pcm", (when, when))
    again = store_of(tmp_path, 3)
    assert again.stats()["entries"] == 3
    assert again.put(key(4), audio(4))
    assert [again.contains(key(n)) for n in (1, 2, 3, 4)] == [True, False, True, True]


def test_the_least_recently_used_entry_goes_first(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    for n in (1, 2, 3):
        store.put(key(n), audio(n))
    assert store.get(key(1)) is not None  # 1 is now the most recent; 2 the least
    store.put(key(4), audio(4))
    assert [store.contains(key(n)) for n in (1, 2, 3, 4)] == [True, False, True, True]
    store.put(key(5), audio(5))
    assert [store.contains(key(n)) for n in (1, 3, 4, 5)] == [True, False, True, True]
    assert store.stats()["bytes"] <= store.max_bytes
    assert len(list((tmp_path / "cache").glob("*.pcm"))) == 3


def test_the_index_is_bounded_by_entries_too(tmp_path: Path) -> None:
    store = store_of(tmp_path, 100, max_entries=2)
    for n in (1, 2, 3):
        store.put(key(n), audio(n, 10))
    assert [store.contains(key(n)) for n in (1, 2, 3)] == [False, True, True]


def test_phrases_stay_and_others_never_push_them_out(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    store.pin([key(1).digest, key(2).digest, key(3).digest, key(4).digest])
    for n in (1, 2, 3):
        assert store.put(key(n), audio(n))
    assert not store.put(key(9), audio(9)), "an unpinned entry evicted a phrase"
    assert not store.put(key(4), audio(4)), "a phrase evicted another phrase"
    assert all(store.contains(key(n)) for n in (1, 2, 3))
    store.pin([key(4).digest])  # the phrase list changed: the old ones may go now
    assert store.put(key(4), audio(4))
    assert store.stats()["phrase_entries"] == 1


def test_unpinned_entries_go_before_phrases(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    store.pin([key(1).digest, key(4).digest])
    for n in (1, 2, 3):
        store.put(key(n), audio(n))
    assert store.put(key(4), audio(4))  # the least recent unpinned (2) goes, not 1
    assert [store.contains(key(n)) for n in (1, 2, 3, 4)] == [True, False, True, True]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-7],  # truncated
        lambda data: (
            data[: len(data) // 2] + bytes([data[len(data) // 2] ^ 1]) + data[len(data) // 2 + 1 :]
        ),
        lambda data: b"",  # a power cut before the data reached the disk
        lambda data: b"X" + data[1:],  # not our magic
    ],
    ids=["truncated", "flipped-bit", "empty", "magic"],
)
def test_a_damaged_entry_is_discarded_never_returned(tmp_path: Path, damage: object) -> None:
    lost: list[int] = []
    store = store_of(tmp_path, 4, on_change=lambda: lost.append(1))
    store.pin([key(1).digest])
    store.put(key(1), audio(1))
    path = tmp_path / "cache" / f"{key(1).digest}.pcm"
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert store.get(key(1)) is None
    assert not path.exists() and not store.contains(key(1))
    assert store.stats()["discarded"] == 1
    assert lost == [1], "the pre-renderer was not told a phrase is gone"


def vm_hwm_mb() -> float:
    """This process's peak resident set size so far (the kernel's high-water mark)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def test_an_oversized_entry_is_discarded_unread(tmp_path: Path) -> None:
    store = store_of(tmp_path, 4)
    store.put(key(1), audio(1))
    path = tmp_path / "cache" / f"{key(1).digest}.pcm"
    os.truncate(path, 2**30)  # sparse: no disk used, but a whole read would take 1 GiB
    before = vm_hwm_mb()
    assert store.get(key(1)) is None
    assert vm_hwm_mb() - before < 256, "the entry was read whole"
    assert not path.exists() and store.stats()["discarded"] == 1


def test_an_oversized_entry_left_by_a_previous_run_is_not_indexed(tmp_path: Path) -> None:
    store = store_of(tmp_path, 4)
    store.put(key(1), audio(1))
    store.put(key(2), audio(2))
    os.truncate(tmp_path / "cache" / f"{key(1).digest}.pcm", 2**30)
    again = store_of(tmp_path, 4)
    assert not again.contains(key(1)) and again.contains(key(2))
    assert again.stats()["discarded"] == 1 and again.stats()["bytes"] == entry_bytes()


def test_no_entry_larger_than_the_read_bound_is_stored(tmp_path: Path) -> None:
    store = store_of(tmp_path, 4)
    store.max_entry_bytes = entry_bytes() - 1  # as MAX_ENTRY_BYTES would a huge chunk
    assert not store.put(key(1), audio(1)) and not store.contains(key(1))


def test_an_entry_renamed_to_another_key_is_refused(tmp_path: Path) -> None:
    data = encode(key(1), audio(1))
    assert data.startswith(MAGIC)
    with pytest.raises(CorruptEntry, match="another chunk"):
        decode(data, key(2))
    with pytest.raises(CorruptEntry, match="another chunk"):
        decode(data, key(1, rate=24000))


def test_writes_are_atomic_and_leftovers_are_cleaned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_of(tmp_path, 4)
    directory = tmp_path / "cache"
    names: list[str] = []
    real_replace = os.replace

    def watching_replace(src: object, dst: object) -> None:
        names.append(Path(str(src)).name)
        assert not Path(str(dst)).exists()  # nothing under the final name before this
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", watching_replace)
    store.put(key(1), audio(1))
    assert names and names[0].startswith(".") and names[0].endswith(".tmp")
    assert [p.name for p in directory.iterdir()] == [f"{key(1).digest}.pcm"]
    (directory / f".{key(2).digest}.dead.tmp").write_bytes(b"half an entry")  # a crash
    again = store_of(tmp_path, 4)
    assert [p.name for p in directory.iterdir()] == [f"{key(1).digest}.pcm"]
    assert again.get(key(1)) is not None


def test_a_full_disk_degrades_and_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = store_of(tmp_path, 4)
    real_write = Path.write_bytes

    def full(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full)
    assert not store.put(key(1), audio(1))
    assert store.problem is not None and "No space left" in store.problem
    store.recover()
    assert store.problem is not None  # the probe cannot be written either
    monkeypatch.setattr(Path, "write_bytes", real_write)
    store.recover()  # the probe has room, but that says nothing about the next entry
    assert store.problem is not None and "No space left" in store.problem
    assert store.put(key(1), audio(1))  # a stored entry clears it
    assert store.problem is None
    assert not list((tmp_path / "cache").glob(".*"))


def test_a_directory_under_an_entry_name_is_set_aside_and_the_entry_stored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = store_of(tmp_path, 4)
    cache = tmp_path / "cache"

    def make_directory(n: int) -> None:
        (cache / f"{key(n).digest}.pcm").mkdir()
        (cache / f"{key(n).digest}.pcm" / "kept.txt").write_text(f"someone's file {n}")

    make_directory(1)
    assert store.put(key(1), audio(1))  # made before the entry was ever stored
    assert store.put(key(2), audio(2))
    (cache / f"{key(2).digest}.pcm").unlink()
    make_directory(2)  # in place of an entry in the index
    assert store.get(key(2)) is None
    assert store.put(key(2), audio(2))
    make_directory(3)
    reopened = CacheStore(cache, store.max_bytes)
    reopened.open()  # key(3)'s directory is set aside while the directory is read
    assert reopened.put(key(3), audio(3))
    for n in (1, 2, 3):
        found = reopened.get(key(n))
        assert found is not None and np.array_equal(found.audio, audio(n))
    aside = sorted(cache.glob(".*.set-aside"))
    assert sorted(p.name.split(".")[1] for p in aside) == [key(n).digest for n in (1, 2, 3)]
    kept = {(p / "kept.txt").read_text() for p in aside}
    assert kept == {f"someone's file {n}" for n in (1, 2, 3)}
    assert store.problem is None and reopened.problem is None
    assert caplog.text.count("is not a cache entry; moved it to") == 3


def test_a_directory_that_cannot_be_made_degrades_until_it_can(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    store = CacheStore(blocker / "cache", 10 * entry_bytes())
    store.open()
    assert store.problem is not None and str(blocker / "cache") in store.problem
    assert not store.put(key(1), audio(1)) and store.get(key(1)) is None
    blocker.unlink()
    store.recover()
    assert store.problem is None
    assert store.put(key(1), audio(1))
