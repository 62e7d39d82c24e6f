"""`edge-ttsd say` as a user runs it: a subprocess."""

from __future__ import annotations

import json
import re
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from edge_tts.voice import files
from edge_tts.voice.model import Voice

from .conftest import run_cli
from .support.soundcard import VirtualSoundCard

pytestmark = [
    pytest.mark.daemon,
    pytest.mark.serial,
]  # serial: timing-sensitive


def read_wav(path: Path) -> tuple[wave._wave_params, np.ndarray]:
    with wave.open(str(path), "rb") as wav:
        params = wav.getparams()
        return params, np.frombuffer(wav.readframes(params.nframes), dtype="<i2")


def test_say_out_writes_a_valid_wav(tmp_path: Path) -> None:
    out = tmp_path / "hello.wav"
    result = run_cli("say", "--out", str(out), "Your battery is at 15 percent.")
    assert result.returncode == 0, result.stderr
    params, pcm = read_wav(out)
    assert (params.nchannels, params.sampwidth, params.framerate) == (1, 2, 22050)
    assert 1.0 < len(pcm) / 22050 < 5.0
    assert np.sqrt(np.mean((pcm / 32768.0) ** 2)) > 0.02
    assert "first audio after" in result.stderr


def test_say_speaks_mandarin_with_a_voice_directory(tmp_path: Path, mandarin_voice: Path) -> None:
    out = tmp_path / "zh.wav"
    text = "车门即将关闭，请注意安全。"
    result = run_cli("say", "--voice", str(mandarin_voice), "--out", str(out), text)
    assert result.returncode == 0, result.stderr
    params, pcm = read_wav(out)
    assert params.framerate == 24000  # the voice's own rate: nothing to resample to
    assert 11 / 7 < len(pcm) / 24000 < 11 / 3 + 0.7  # 11 syllables, with pauses
    assert np.sqrt(np.mean((pcm / 32768.0) ** 2)) > 0.02


def test_say_reads_stdin_and_applies_volume(tmp_path: Path) -> None:
    loud, quiet = tmp_path / "loud.wav", tmp_path / "quiet.wav"
    text = "The mail has arrived."
    args = ["--voice", "en_US-joe-medium-fp32"]
    assert run_cli("say", *args, "--out", str(loud), "-", stdin=text).returncode == 0
    assert run_cli("say", *args, "--volume", "0.25", "--out", str(quiet), text).returncode == 0
    loud_peak = np.abs(read_wav(loud)[1].astype(np.int32)).max()
    quiet_peak = np.abs(read_wav(quiet)[1].astype(np.int32)).max()
    assert quiet_peak < loud_peak * 0.5


def has_sound_card() -> bool:
    cards = Path("/proc/asound/cards")
    return cards.exists() and "no soundcards" not in cards.read_text()


@pytest.mark.skipif(has_sound_card(), reason="this machine has a real sound card")
def test_no_sound_card_suggests_out(tmp_path: Path) -> None:
    # HOME without an asoundrc: ALSA sees only the (absent) hardware, like a bare board.
    result = run_cli("say", "Hello.", env={"HOME": str(tmp_path)})
    assert result.returncode == 69, result.stderr
    assert "--out" in result.stderr and "Traceback" not in result.stderr


def test_unknown_device_is_reported(tmp_path: Path) -> None:
    result = run_cli("say", "--device", "no-such-device", "Hello.")
    assert result.returncode == 69
    assert "no-such-device" in result.stderr and "--out" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["..."], "nothing speakable"),
        (["--voice", "/nonexistent/v.onnx", "Hi."], "not found"),
        (["--voice", "klingon", "Hi."], "unknown voice"),
        (["--speed", "0", "Hi."], "--speed"),
    ],
)
def test_bad_input_is_a_clear_error(args: list[str], message: str, tmp_path: Path) -> None:
    result = run_cli("say", "--out", str(tmp_path / "x.wav"), *args)
    assert result.returncode != 0
    assert message in result.stderr.lower() and "Traceback" not in result.stderr


def test_multi_speaker_names_map_to_ids(tmp_path: Path, fp32_files: files.VoiceFiles) -> None:
    config = json.loads(fp32_files.config.read_text())
    config.update(num_speakers=3, speaker_id_map={"alice": 0, "bob": 2})
    (tmp_path / "multi.onnx").write_bytes(b"")
    (tmp_path / "multi.onnx.json").write_text(json.dumps(config))
    voice = Voice(files.from_model_path(tmp_path / "multi.onnx"))
    assert voice.speaker_id("bob") == 2
    assert voice.speaker_id("1") == 1
    assert voice.speaker_id(None) == 0
    with pytest.raises(ValueError, match="no speaker 'carol'"):
        voice.speaker_id("carol")


def test_say_plays_through_alsa_in_real_time(sound_card: VirtualSoundCard) -> None:
    mark = sound_card.mark()
    started = time.monotonic()
    result = run_cli("say", "The mail has arrived. Welcome home!", env=sound_card.env)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr + sound_card.log()
    seconds = float(re.search(r"([\d.]+) s of audio", result.stderr).group(1))  # type: ignore[union-attr]
    assert 1.0 < seconds < 6.0
    assert elapsed >= seconds  # the card is paced: playing cannot finish faster than real time
    # Until the sound server has written the last of it into the FIFO.
    played = sound_card.wait_played(mark, min_sound_s=seconds - 0.6)
    audio = played.astype(np.float32) / 32768
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    assert loud.size, "nothing audible reached the sound card"
    # All of it, once: as long as the audio on an idle machine. One too busy to synthesize
    # in real time plays silence while it catches up (`say` streams sentence by sentence),
    # which only lengthens the span, never beyond the run, and adds no sound.
    span = (loud[-1] - loud[0]) / 22050
    assert seconds - 0.6 <= span <= elapsed
    assert np.count_nonzero(played) / 22050 <= seconds + 0.1


def test_say_ssml_starts_with_its_break_in_exact_silence(tmp_path: Path) -> None:
    out = tmp_path / "ssml.wav"
    text = '<speak><break time="1s"/>Gate <say-as interpret-as="characters">B12</say-as>.</speak>'
    result = run_cli("say", "--ssml", "--out", str(out), text)
    assert result.returncode == 0, result.stderr
    _, pcm = read_wav(out)
    second = 22050
    assert not pcm[:second].any()  # the break, after the WAV's lead-in: digital zeros
    assert np.sqrt(np.mean((pcm[second:] / 32768.0) ** 2)) > 0.02


def test_say_refuses_text_that_is_not_utf8_without_a_traceback(tmp_path: Path) -> None:
    out = tmp_path / "x.wav"
    piped = run_cli("say", "--ssml", "--out", str(out), "-", stdin_bytes=b"<speak>caf\xe9</speak>")
    assert piped.returncode == 2 and "the text is not valid UTF-8 (byte 10)" in piped.stderr
    assert "Traceback" not in piped.stderr and not out.exists()


def test_say_with_config_holds_ssml_to_the_configured_text_limit(tmp_path: Path) -> None:
    config = tmp_path / "edge-tts.yaml"
    config.write_text(json.dumps({"device_id": "pi", "queue": {"max_text_chars": 30}}))
    text = "<speak>Front door is open.</speak>"  # 34 characters: within the default limit
    result = run_cli("say", "--config", str(config), "--out", str(tmp_path / "x.wav"), text)
    assert result.returncode == 2
    assert "SSML is 34 characters; the limit is 30" in result.stderr


def test_say_refuses_bad_ssml_saying_where(tmp_path: Path) -> None:
    result = run_cli(
        "say", "--out", str(tmp_path / "x.wav"), "<speak>Hi <break time='ever'/>there</speak>"
    )
    assert result.returncode == 2  # usage
    assert "SSML line 1, column 11: break time 'ever' is not a duration" in result.stderr
    assert not (tmp_path / "x.wav").exists()


def test_say_with_the_daemons_settings_uses_its_lexicon_and_voices(tmp_path: Path) -> None:
    """`say --config` speaks as the daemon with those settings would: a lexicon entry is
    read as its alias (here much longer than the word), and an unknown voice name is an
    error naming the configured ones."""
    config = tmp_path / "edge-tts.yaml"
    alias = "the north entrance beside the old loading dock"
    config.write_text(json.dumps({"device_id": "pi", "text": {"lexicon": [f"NE = {alias}"]}}))
    plain, aliased = tmp_path / "plain.wav", tmp_path / "aliased.wav"
    assert run_cli("say", "--out", str(plain), "Meet at NE.").returncode == 0
    result = run_cli("say", "--config", str(config), "--out", str(aliased), "Meet at NE.")
    assert result.returncode == 0, result.stderr
    assert len(read_wav(aliased)[1]) > 2 * len(read_wav(plain)[1])
    result = run_cli("say", "--config", str(config), "--voice", "nope", "Hi.")
    assert result.returncode != 0 and "configured: default" in result.stderr
