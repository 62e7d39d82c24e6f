"""SSML's `<audio src>`: a WAV from the sounds directory (text.sounds_dir), played where it
stands among the words and breaks, or its fallback text; nothing is ever fetched."""

from __future__ import annotations

import os
import re
import wave
from pathlib import Path

import numpy as np
import pytest

from edge_tts import cache
from edge_tts.audio.sounds import SoundError, Sounds
from edge_tts.cache.planned import PlannedChunk
from edge_tts.cache.serving import PhraseCache
from edge_tts.cache.store import CacheStore
from edge_tts.cli.oneshot import say
from edge_tts.config import SynthesisSettings, TextSettings
from edge_tts.core.telemetry import Telemetry
from edge_tts.speech import FIGURES
from edge_tts.speech.chunk_render import ChunkRenderer, ChunkStats
from edge_tts.speech.routing import Router
from edge_tts.speech.synthesis import render
from edge_tts.text import EmptyTextError
from edge_tts.text.lexicon import Entry, Lexicon
from edge_tts.text.readings import readable, reading
from edge_tts.text.ssml import parse
from edge_tts.voice.base import SpeechOptions

from .support.fakes import FakeOutput, FakeVoice

pytestmark = pytest.mark.unit

CHIME_HZ = 880.0  # the fake voice speaks a 220 Hz tone


def write_wav(
    path: Path, seconds: float, rate: int = 44_100, channels: int = 1, width: int = 2
) -> Path:
    t = np.arange(round(seconds * rate)) / rate
    tone = 0.5 * np.sin(2 * np.pi * CHIME_HZ * t)
    full = {1: 127, 2: 32767}[width]
    samples = np.rint(tone * full) + (128 if width == 1 else 0)
    frames = np.repeat(samples[:, None], channels, axis=1).astype("u1" if width == 1 else "<i2")
    with wave.open(str(path), "wb") as file:
        file.setnchannels(channels)
        file.setsampwidth(width)
        file.setframerate(rate)
        file.writeframes(frames.tobytes())
    return path


@pytest.fixture()
def sounds_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "sounds"
    directory.mkdir()
    write_wav(directory / "chime.wav", 0.3)
    return directory


def router(directory: Path | None, max_silence_s: float = 30.0) -> Router:
    text = TextSettings(sounds_dir=directory, max_silence_s=max_silence_s)
    return Router(SynthesisSettings(), text=text)


def plan(body: str, directory: Path | None) -> list[PlannedChunk]:
    document = parse(f"<speak>{body}</speak>", max_chars=2000)
    return router(directory).plan(document, FakeVoice(), SpeechOptions(volume=1.0))


def placed(
    chunks: list[PlannedChunk],
) -> list[tuple[str, tuple[float, float], list[tuple[str, float]]]]:
    """Each chunk's text, silence and sounds ("before"/"after", at seconds)."""
    return [
        (
            readable(c.text),
            c.silence,
            [("after" if p.after else "before", round(p.at, 3)) for p in c.sounds],
        )
        for c in chunks
    ]


def test_a_sound_in_the_directory_plays_instead_of_its_fallback(sounds_dir: Path) -> None:
    chunks = plan('<audio src="chime.wav">ding dong</audio>Front door open.', sounds_dir)
    assert placed(chunks) == [("Front door open.", (0, 0), [("before", 0.0)])]
    assert chunks[0].breaks == (True, False)  # the chime is the pause before the words
    sound = chunks[0].sounds[0].sound
    assert (sound.name, sound.rate, round(sound.seconds, 3)) == ("chime.wav", 44_100, 0.3)


def test_sounds_keep_their_place_among_the_breaks(sounds_dir: Path) -> None:
    body = 'One.<break time="1s"/><audio src="chime"/><break time="500ms"/>Two.<audio src="chime"/>'
    assert placed(plan(body, sounds_dir)) == [
        ("One.", (0, 1.5), [("after", 1.0)]),  # 1 s, the chime, 0.5 s
        ("Two.", (0, 0), [("after", 0.0)]),
    ]


@pytest.mark.parametrize(
    ("src", "why"),
    [
        ("https://example.com/chime.mp3", "is a URL: nothing is ever fetched"),
        ("file:///etc/passwd", "is a URL"),
        ("../chime.wav", "is not a plain file name"),
        ("/etc/passwd", "is not a plain file name"),
        ("sub/chime.wav", "is not a plain file name"),
        (".hidden.wav", "is not a plain file name"),
        ("bell.wav", "is not in the sounds directory"),
    ],
)
def test_a_src_that_is_no_plain_name_there_reads_the_fallback_saying_why(
    sounds_dir: Path, src: str, why: str
) -> None:
    (sounds_dir / "sub").mkdir()
    write_wav(sounds_dir / "sub" / "chime.wav", 0.1)
    body = f'<audio src="{src}">Ding,</audio> door open.'
    assert placed(plan(body, sounds_dir)) == [("Ding, door open.", (0, 0), [])]
    document = parse(f"<speak>{body}</speak>", max_chars=2000)
    notes: list[str] = []
    router(sounds_dir).plan(document, FakeVoice(), SpeechOptions(), notes=notes)
    (note,) = notes
    assert note.startswith("SSML line 1, column 8: <audio>:") and why in note, note
    assert note.endswith("its content is read")


def test_without_a_sounds_directory_every_audio_reads_its_fallback() -> None:
    document = parse('<speak><audio src="chime.wav">Ding.</audio> Hi.</speak>', max_chars=200)
    notes: list[str] = []
    chunks = router(None).plan(document, FakeVoice(), SpeechOptions(), notes=notes)
    assert [c.text for c in chunks] == ["Ding.", "Hi."]
    assert "no sounds directory is configured (text.sounds_dir)" in notes[0]


def test_a_link_out_of_the_directory_is_not_followed(sounds_dir: Path, tmp_path: Path) -> None:
    outside = write_wav(tmp_path / "secret.wav", 0.1)
    os.symlink(outside, sounds_dir / "secret.wav")
    with pytest.raises(SoundError, match="is not in the sounds directory"):
        Sounds(sounds_dir, 30).find("secret.wav")


def test_a_sound_is_bounded_by_the_silence_limit_of_its_request(sounds_dir: Path) -> None:
    write_wav(sounds_dir / "long.wav", 2.0, rate=8000)
    with pytest.raises(SoundError, match=r"long.wav is 2.0 s; the limit is 1.5 s"):
        Sounds(sounds_dir, max_seconds=1.5).find("long")  # refused from its header
    document = parse(
        '<speak><audio src="chime"/>A.<break time="1s"/><audio src="chime"/>B.</speak>',
        max_chars=200,
    )
    with pytest.raises(ValueError, match=r"breaks and sounds add up to 1.6 s of silence"):
        router(sounds_dir, max_silence_s=1.5).plan(document, FakeVoice(), SpeechOptions())


def test_what_is_not_a_pcm_wav_is_refused_saying_so(sounds_dir: Path) -> None:
    (sounds_dir / "chime.mp3.wav").write_bytes(b"ID3\x03\x00" + bytes(100))
    with pytest.raises(SoundError, match=r"chime.mp3.wav is not a PCM WAV file"):
        Sounds(sounds_dir, 30).find("chime.mp3.wav")


def test_stereo_and_8_bit_files_are_read_as_mono(sounds_dir: Path) -> None:
    write_wav(sounds_dir / "stereo.wav", 0.2, rate=16_000, channels=2)
    write_wav(sounds_dir / "old.wav", 0.2, rate=8_000, width=1)
    for name, rate in (("stereo", 16_000), ("old", 8_000)):
        sound = Sounds(sounds_dir, 30).find(name)
        assert sound.rate == rate and sound.samples.ndim == 1
        assert abs(float(np.abs(sound.samples).max()) - 0.5) < 0.01


def test_the_sound_is_played_at_the_chunks_rate_in_its_place(sounds_dir: Path) -> None:
    """Resampled (44.1 kHz file, 22.05 kHz voice) to the same length, before the speech;
    the 880 Hz chime, then the voice's 220 Hz."""
    (chunk,) = plan('<audio src="chime.wav"/><break time="200ms"/>Hi.', sounds_dir)
    voice = chunk.voice
    pcm = np.concatenate(
        list(
            render(
                voice,
                chunk.text,
                chunk.options,
                True,
                silence=chunk.silence,
                breaks=chunk.breaks,
                sounds=chunk.sounds,
            )
        )
    ).astype(np.float64)
    rate = voice.sample_rate
    chime, gap = round(0.3 * rate), round(0.2 * rate)
    assert dominant_hz(pcm[:chime], rate) == pytest.approx(CHIME_HZ, abs=5)
    assert abs(pcm[:chime]).max() > 0.4 * 32767
    assert not pcm[chime + 5 : chime + gap].any()  # the break after the chime, then speech
    assert dominant_hz(pcm[chime + gap :], rate) == pytest.approx(220, abs=5)


def dominant_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(samples.size, 1 / rate)[int(np.argmax(spectrum))])


# --- a text of only sounds and breaks -------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "silence", "sounds"),
    [
        ('<audio src="chime.wav"/>', (0, 0), [("before", 0.0)]),
        ('<break time="300ms"/><audio src="chime.wav"/>', (0.3, 0), [("before", 0.3)]),
        (
            '<audio src="chime"/><break time="1s"/><audio src="chime"/>',
            (1, 0),
            [("before", 0.0), ("before", 1.0)],
        ),
        ('<break time="200ms"/>...<audio src="chime"/>', (0.2, 0), [("before", 0.2)]),
        ('<break time="1s"/>', (1, 0), []),
    ],
)
def test_a_text_of_only_sounds_and_breaks_is_one_chunk_without_speech(
    sounds_dir: Path, body: str, silence: tuple[float, float], sounds: list[tuple[str, float]]
) -> None:
    assert placed(plan(body, sounds_dir)) == [("", silence, sounds)]


def test_an_audio_that_cannot_play_says_its_fallback_even_alone(sounds_dir: Path) -> None:
    for body in (
        '<audio src="bell.wav">Ding dong.</audio>',
        '<audio src="https://x/a.mp3">Ding dong.</audio>',
    ):
        assert placed(plan(body, sounds_dir)) == [("Ding dong.", (0, 0), [])]


@pytest.mark.parametrize(
    "body",
    [
        '<audio src="bell.wav"/>',  # not there, no fallback
        '<audio src="../chime.wav"/>',  # outside the directory
        '<audio src="https://x/chime.mp3"> </audio>',
        '<break strength="none"/><audio src="bell"/>',  # a 0 s break plays nothing
    ],
)
def test_with_no_sound_to_play_no_fallback_and_no_break_it_is_empty(
    sounds_dir: Path, body: str
) -> None:
    with pytest.raises(EmptyTextError, match="nothing speakable"):
        plan(body, sounds_dir)


def speakers_audio(body: str, sounds_dir: Path) -> np.ndarray:
    """What `edge-ttsd say` plays for `<speak>body</speak>`: its pipeline, a fake voice
    and output, the sounds of `sounds_dir`."""
    text = f"<speak>{body}</speak>"
    output, voice = FakeOutput(speedup=1000), FakeVoice()
    say(
        text,
        voice,
        SpeechOptions(),
        output,
        SynthesisSettings(),
        parse(text, max_chars=2000),
        router(sounds_dir),
    )
    return output.recorded["say"].astype(np.float64)


def test_say_plays_a_text_that_is_only_a_sound(tmp_path: Path) -> None:
    write_wav(tmp_path / "doorbell.wav", 0.3)
    pcm = speakers_audio('<audio src="doorbell.wav"/>', tmp_path)
    assert pcm.size == round(0.3 * 22_050)  # the sound, resampled, and nothing else
    assert dominant_hz(pcm, 22_050) == pytest.approx(CHIME_HZ, abs=5)
    assert abs(pcm).max() > 0.4 * 32767


def test_say_plays_the_break_then_the_sound(sounds_dir: Path) -> None:
    pcm = speakers_audio('<break time="300ms"/><audio src="chime.wav"/>', sounds_dir)
    gap, chime = round(0.3 * 22_050), round(0.3 * 22_050)
    assert pcm.size == gap + chime
    assert not pcm[:gap].any()
    assert dominant_hz(pcm[gap:], 22_050) == pytest.approx(CHIME_HZ, abs=5)


def test_a_chunk_without_speech_asks_neither_the_cache_nor_the_voice(
    sounds_dir: Path, tmp_path: Path
) -> None:
    (chunk,) = plan('<audio src="chime"/>', sounds_dir)
    store = CacheStore(tmp_path / "cache", 2**20)
    store.open()
    telemetry = Telemetry(figures=(FIGURES, cache.FIGURES))
    pieces: list[np.ndarray] = []

    def deliver(pcm: np.ndarray) -> bool:
        pieces.append(pcm)
        return True

    renderer = ChunkRenderer(PhraseCache(store, telemetry))  # the daemon's, every door's
    renderer.render(chunk, True, 22_050, deliver, stats=ChunkStats(), whose="t")
    assert sum(p.size for p in pieces) == round(0.3 * 22_050)
    counters = telemetry.snapshot({})["counters"]
    assert isinstance(counters, dict)
    assert counters["cache_misses"] == counters["cache_hits"] == 0
    voice = chunk.voice
    assert isinstance(voice, FakeVoice) and not voice.loaded and voice.calls == 0


# --- the fallback text is text like any other -----------------------------------------------


@pytest.mark.parametrize("src", ["bell.wav", "https://x/bell.mp3", "../chime.wav"])
def test_the_fallback_of_an_audio_that_cannot_play_goes_through_the_lexicon(
    sounds_dir: Path, src: str
) -> None:
    lexicon = Lexicon(
        [Entry("Nguyen", alias="win"), Entry("Castro", reading=reading("ipa", "kˈæstɹoʊ"))]
    )
    text = TextSettings(sounds_dir=sounds_dir)
    routed = Router(SynthesisSettings(), lexicon=lexicon, text=text)
    body = f'<audio src="{src}">Nguyen rang 3 times for Castro.</audio>'
    document = parse(f"<speak>{body}</speak>", max_chars=2000)
    (chunk,) = routed.plan(document, FakeVoice(), SpeechOptions())
    assert readable(chunk.text) == "win rang three times for [ipa: kˈæstɹoʊ]."


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('<s><audio src="bell.wav">Nguyen rang</audio></s><s>Next</s>', ["win rang.", "Next."]),
        ('<p><audio src="bell">The door</audio></p>Nguyen', ["The gate. win"]),
        ('<s>Hi <audio src="bell">Nguyen!</audio></s>Go', ["Hi win!", "Go"]),
    ],
)
def test_a_fallback_that_ends_a_sentence_ends_it_as_the_same_text_would(
    sounds_dir: Path, body: str, said: list[str]
) -> None:
    """<s> and <p> end their sentence after the fallback that is read (it was run on
    into the next: "win rangNext."), the lexicon applied to it: as without <audio>."""
    lexicon = Lexicon([Entry("Nguyen", alias="win"), Entry("door", alias="gate")])
    routed = Router(SynthesisSettings(), lexicon=lexicon, text=TextSettings(sounds_dir=sounds_dir))
    for text in (body, re.sub(r"</?audio[^>]*>", "", body)):
        document = parse(f"<speak>{text}</speak>", max_chars=2000)
        assert [c.text for c in routed.plan(document, FakeVoice(), SpeechOptions())] == said


def test_a_sound_that_plays_at_a_sentences_end_says_no_period(sounds_dir: Path) -> None:
    body = '<s><audio src="chime">Ding</audio></s><s>Next</s>'
    assert placed(plan(body, sounds_dir)) == [("Next.", (0, 0), [("before", 0.0)])]
