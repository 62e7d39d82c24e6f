"""`say` through the daemon's pipeline, with fakes of the voice and the output (the
subprocess tests of the command are in test_say_cli.py)."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from edge_tts.audio.dsp import ms_to_frames
from edge_tts.audio.output import AudioOutput
from edge_tts.audio.wavfile import WavFileOutput
from edge_tts.cli.oneshot import (
    FIGURES,
    ORIGIN,
    NoSoundCardError,
    OneShotReporter,
    SayFailed,
    SayReport,
    say,
)
from edge_tts.config import AudioSettings, SynthesisSettings
from edge_tts.core.telemetry import Telemetry
from edge_tts.messages.request import SayRequest
from edge_tts.speech.jobs import Job
from edge_tts.speech.listeners import Reporters
from edge_tts.speech.outcome import Event, Kind
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.integrity import ModelIntegrityError

from .support.fakes import FakeOutput, FakeVoice

pytestmark = pytest.mark.unit

TEXT = "The mail has arrived. Welcome home!"


def speak(output: AudioOutput, voice: FakeVoice | None = None, text: str = TEXT) -> SayReport:
    fake = voice or FakeVoice()
    return say(text, fake, SpeechOptions(), output, SynthesisSettings())


def test_plays_every_chunk_and_closes_the_output() -> None:
    output = FakeOutput(speedup=1000)
    report = speak(output)
    assert report.chunks == 2
    assert report.audio_seconds > 0
    assert output.recorded["say"].size == sum(n for _, n in output.played)
    assert output.closed


def test_the_engine_measures_say_s_request_by_a_door_its_telemetry_knows() -> None:
    # What `say`'s pipeline does as its request finishes (a door its telemetry did not
    # know raised there, and `say` waited for good for the final event).
    telemetry, reporter = Telemetry(figures=FIGURES), OneShotReporter()
    request = SayRequest(id="say", text=TEXT, key="say", origin=ORIGIN)
    job = Job(request, [], FakeVoice(), SpeechOptions())
    job.timing.first_audio()
    job.timing.audio_seconds, job.timing.synth_seconds = 2.0, 0.5
    Reporters(reporter, telemetry=telemetry).report(Event(Kind.FINISHED, job))
    assert reporter.outcome is Kind.FINISHED
    histograms = telemetry.histograms()
    assert histograms[("real_time_factor", ORIGIN.door)][2] == 1
    assert histograms[("real_time_factor", None)][2] == 1  # it played here


def test_nothing_speakable_is_bad_input_and_plays_nothing() -> None:
    output = FakeOutput(speedup=1000)
    with pytest.raises(ValueError, match="nothing speakable"):
        speak(output, text="?!")
    assert output.played == [] and output.closed


def test_an_output_that_cannot_start_is_no_sound_card_before_the_model_loads() -> None:
    output, voice = FakeOutput(available=False), FakeVoice()
    with pytest.raises(NoSoundCardError, match="unplugged"):
        speak(output, voice)
    assert not voice.loaded and output.closed


def test_a_refused_model_closes_the_output() -> None:
    output, voice = FakeOutput(), FakeVoice()
    voice.load_error = ModelIntegrityError("digest mismatch")
    with pytest.raises(ModelIntegrityError):
        speak(output, voice)
    assert output.closed and output.played == []


def test_wav_file_output_writes_the_named_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "hello world.wav"
    report = speak(WavFileOutput(path, AudioSettings(), 22050))
    with wave.open(str(path), "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 22050)
        lead_in = ms_to_frames(AudioSettings().lead_in_ms, 22050)  # players wake late
        assert (wav.getnframes() - lead_in) / 22050 == pytest.approx(report.audio_seconds)
        assert lead_in > 0 and not any(wav.readframes(lead_in))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_wav_file_output_that_cannot_be_written_fails_without_a_file(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "x.wav"
    with pytest.raises(SayFailed, match="cannot write"):
        speak(WavFileOutput(path, AudioSettings(), 22050))
    assert not path.parent.exists()
