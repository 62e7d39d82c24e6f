"""The pronunciation lexicon: its line format, where an entry matches and applies, what the
real voices are then given, `edge-ttsd explain`, and the daemon reloading it on SIGHUP."""

from __future__ import annotations

import json
import re
import signal
import wave
from pathlib import Path
from typing import Any

import pytest
import yaml

from edge_tts.config import SynthesisSettings, settings_from_mapping
from edge_tts.speech.readout import explain, syllables
from edge_tts.speech.routing import Router
from edge_tts.text.document import Span
from edge_tts.text.lexicon import Entry, Lexicon, LexiconError, load, parse_entry
from edge_tts.text.readings import Reading, readable
from edge_tts.text.ssml import parse
from edge_tts.voice import files
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.model import Voice
from edge_tts.voice.registry import Voices
from edge_tts.voice.two_stage import TwoStageVoice

from .conftest import run_cli
from .support.broker import Broker, Recorder
from .support.daemon_proc import REPO, DaemonProcess, daemon_config
from .test_ssml import EN, MANDARIN, VOICES

# --- the line format --------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("line", "entry"),
    [
        ("I-95 = I ninety-five", Entry("I-95", alias="I ninety-five")),
        ("  Main  St.   =  Main Street  ", Entry("Main St.", alias="Main Street")),
        ("Nguyen = ipa: ŋwˈɪn", Entry("Nguyen", reading=Reading("ipa", "ŋwˈɪn"))),
        ("重庆 = pinyin: Chong2 qing4", Entry("重庆", reading=Reading("x-pinyin", "chong2 qing4"))),
        (
            "重庆 = x-pinyin:chong2 qing4",
            Entry("重庆", reading=Reading("x-pinyin", "chong2 qing4")),
        ),
        ("read @en-us = ipa: ɹˈɛd", Entry("read", reading=Reading("ipa", "ɹˈɛd"), scope="en-us")),
        ("行 @mandarin = 航", Entry("行", alias="航", scope="mandarin")),
        ("  # a comment", None),
        ("", None),
    ],
)
def test_a_line_is_an_entry(line: str, entry: Entry | None) -> None:
    assert parse_entry(line, "here") == entry


@pytest.mark.unit
@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("I-95 I ninety-five", r"here: expected 'PHRASE = READING'"),
        (" = x", r"here: no phrase before '='"),
        ("x =  ", r"here: no reading after '=' for 'x'"),
        ("重庆 = pinyin: chong qing4", r"here: pinyin x-pinyin syllable 'chong' is not pinyin"),
        ("x = ipa:  ", r"here: ipa has no phonemes"),
    ],
)
def test_a_bad_line_says_where_and_why(line: str, reason: str) -> None:
    with pytest.raises(LexiconError, match=reason):
        parse_entry(line, "here")


@pytest.mark.unit
def test_the_file_comes_after_the_inline_entries_and_wins(tmp_path: Path) -> None:
    file = tmp_path / "lexicon.txt"
    file.write_text("# ours\nGPS = G P S\n\nI-95 = Interstate ninety-five\n", "utf-8")
    entries = load(["I-95 = I ninety-five", "Nguyen = ipa: ŋwˈɪn"], file)
    assert [(e.phrase, e.alias) for e in entries] == [
        ("I-95", "Interstate ninety-five"),
        ("Nguyen", None),
        ("GPS", "G P S"),
    ]
    file.write_text("x = pinyin: zz\n", "utf-8")
    with pytest.raises(LexiconError, match=f"{file} line 1: pinyin"):
        load([], file)
    file.write_bytes(b"\xff = x")
    with pytest.raises(LexiconError, match="is not UTF-8"):
        load([], file)
    with pytest.raises(LexiconError, match="cannot read the lexicon"):
        load([], tmp_path / "missing.txt")


# --- where an entry matches and applies -----------------------------------------------------

LINES = [
    "I-95 = I ninety-five",
    "nguyen = ipa: ŋwˈɪn",
    "GPS = G P S",
    "US = ipa: jˈuːˈɛs",
    "重庆 = pinyin: chong2 qing4",
    "重庆市 = pinyin: chong2 qing4 shi4",
    "长 = pinyin: zhang3",
    "3号楼 = 三号楼",
    "Huawei = pinyin: hua2 wei2",
    "read @zh = pinyin: du2",
    "bank @en = ipa: bˈæŋk",
    "行 @mandarin = 航",
]
LEXICON = Lexicon(
    e for n, line in enumerate(LINES) if (e := parse_entry(line, f"l{n}")) is not None
)
ROUTER = Router(SynthesisSettings(), VOICES, LEXICON)


def said(text: str) -> list[tuple[str, str]]:
    speech = parse(text, max_chars=1000) if text.startswith("<speak") else text
    return [(readable(c.text), c.voice.name) for c in ROUTER.plan(speech, EN, SpeechOptions())]


@pytest.mark.unit
def test_a_bom_at_the_start_of_the_file_is_not_part_of_its_first_entry(tmp_path: Path) -> None:
    file = tmp_path / "lexicon.txt"
    file.write_bytes("\ufeffGPS = G P S\nNguyen = ipa: ŋwˈɪn\n".encode())
    assert [e.phrase for e in load([], file)] == ["GPS", "Nguyen"]


@pytest.mark.daemon  # check-lexicon as a user runs it
def test_a_phrase_given_twice_is_warned_naming_both_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / "lexicon.txt"
    file.write_text("GPS = G P S\nNguyen = ipa: ŋwˈɪn\ngps = Gee Pee Ess\n", "utf-8")
    assert [(e.phrase, e.alias) for e in load(["Nguyen = Win"], file)] == [
        ("Nguyen", None),
        ("GPS", "G P S"),
        ("gps", "Gee Pee Ess"),  # "GPS" has a capital: another key than "gps"
    ]
    assert f"text.lexicon item 1: 'Nguyen' is given again at {file} line 2, which wins" in (
        caplog.text
    )
    file.write_text("GPS = G P S\nGPS = Gee Pee Ess\n", "utf-8")
    result = run_cli("check-lexicon", str(file))
    assert result.returncode == 0, result.stderr
    assert f"warning: {file} line 1: 'GPS' is given again at {file} line 2" in result.stderr
    assert "OK (1 entries)" in result.stdout


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Take I-95 north.", [("Take I ninety-five north.", "joe")]),
        ("Take I-950 north.", [("Take I-nine hundred fifty north.", "joe")]),  # a word of its own
        ("Mr. Nguyen and NGUYEN.", [("Mister [ipa: ŋwˈɪn] and [ipa: ŋwˈɪn].", "joe")]),
        ("GPS, gps.", [("G P S, gps.", "joe")]),  # a capital: only as written
        ("USB", [("USB", "joe")]),
        ("欢迎来到重庆市。", [("欢迎来到 [x-pinyin: chong2 qing4 shi4].", "baker")]),  # longest
        ("重庆的长江", [("[x-pinyin: chong2 qing4] 的 [x-pinyin: zhang3] 江", "baker")]),
        ("请到3号楼。", [("请到三号楼.", "baker")]),  # before the numbers are read
        ("13号楼", [("十三号楼", "baker")]),  # a digit before it: another number
        ("Buy Huawei.", [("Buy", "joe"), ("[x-pinyin: hua2 wei2].", "baker")]),
        ("Read the bank.", [("Read the [ipa: bˈæŋk].", "joe")]),  # @zh: not for English
        (
            "<speak>Read <lang xml:lang='zh'>read</lang></speak>",
            [("Read", "joe"), ("[x-pinyin: du2]", "baker")],
        ),
        ("行人", [("航人", "baker")]),  # @mandarin: the voice's name
        (  # not inside say-as or a phoneme's word
            '<speak><say-as interpret-as="characters">GPS</say-as> '
            '<phoneme alphabet="ipa" ph="ɡˈiː">GPS</phoneme> GPS</speak>',
            [("G P S [ipa: ɡˈiː] G P S", "joe")],
        ),
    ],
)
def test_entries_match_on_word_boundaries_and_han_by_the_longest(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert said(text) == expected


@pytest.mark.unit
def test_an_alias_is_not_looked_up_again() -> None:
    loop = Lexicon([Entry("door", alias="door door"), Entry("gate", alias="door")])
    router = Router(SynthesisSettings(), VOICES, loop)
    chunks = router.plan("The gate and the door.", EN, SpeechOptions())
    assert [c.text for c in chunks] == ["The door and the door door."]


@pytest.mark.unit
def test_a_reading_no_voice_reads_is_not_applied() -> None:
    english_only = Router(
        SynthesisSettings(), None, Lexicon([Entry("Huawei", reading=Reading("x-pinyin", "hua2"))])
    )
    assert [c.text for c in english_only.plan("Huawei.", EN, SpeechOptions())] == ["Huawei."]


@pytest.mark.unit
def test_replacing_the_entries_takes_effect_for_the_next_text() -> None:
    lexicon = Lexicon([Entry("door", alias="gate")])
    router = Router(SynthesisSettings(), VOICES, lexicon)
    assert router.plan("The door.", EN, SpeechOptions())[0].text == "The gate."
    lexicon.replace([])
    assert len(lexicon) == 0
    assert router.plan("The door.", EN, SpeechOptions())[0].text == "The door."


@pytest.mark.unit
def test_matching_stays_linear_with_many_entries_of_one_first_letter() -> None:
    lexicon = Lexicon(Entry(f"a{n:04d}", alias="x") for n in range(2000))
    spans = lexicon.apply((Span("a" * 20_000),), lambda entry, span: True)
    assert spans == (Span("a" * 20_000),)


@pytest.mark.unit
def test_pinyin_symbols_read_back_as_syllables() -> None:
    symbols = ["sil", "ch", "ong2", "#0", "q", "ing4", "#3", "^", "iou3", "sil", "eos"]
    assert syllables(symbols) == "chong2 qing4, you3"
    assert MANDARIN.alphabet == "x-pinyin"


# --- the real voices, and explain ----------------------------------------------------------


@pytest.fixture(scope="module")
def real(mandarin_voice: Path) -> tuple[Router, Voices]:
    settings = settings_from_mapping(
        {"device_id": "pi", "voices": {"default": {}, "mandarin": {}}, "default_voice": "default"}
    )
    voices = Voices(
        settings,
        {"default": Voice(files.packaged_fp32()), "mandarin": TwoStageVoice(mandarin_voice)},
    )
    return Router(SynthesisSettings(), voices, LEXICON), voices


@pytest.mark.model
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mr. Nguyen, hi.", [("ipa", "mˈɪstɚ ŋwˈɪn, hˈaɪ.")]),
        ("欢迎来到重庆市。", [("x-pinyin", "huan1 ying2 lai2 dao4 chong2 qing4 shi4")]),
        ("他的长辈", [("x-pinyin", "ta1 de5 zhang3 bei4")]),
        ("请到3号楼。", [("x-pinyin", "qing3 dao4 san1 hao4 lou2")]),
        ("Buy Huawei.", [("ipa", "bˈaɪ"), ("x-pinyin", "hua2 wei2")]),
    ],
)
def test_what_the_real_voices_are_given_with_the_lexicon(
    real: tuple[Router, Voices], text: str, expected: list[tuple[str, str]]
) -> None:
    router, voices = real
    readings = explain(router, voices, text, voices.default, SpeechOptions())
    assert [(r.alphabet, r.said) for r in readings] == expected


def write_config(tmp_path: Path, mandarin_voice: Path, **extra: Any) -> Path:
    config = {
        "device_id": "pi",
        "voices": {"default": {}, "mandarin": {"path": str(mandarin_voice)}},
        **extra,
    }
    path = tmp_path / "edge-tts.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), "utf-8")
    return path


def readme_lexicon() -> tuple[str, str]:
    """The README's lexicon file and its explain command."""
    readme = (REPO / "README.md").read_text("utf-8")
    file = re.search(r"```text\n(# /etc/edge-tts/lexicon\.txt\n.*?)```", readme, re.S)
    command = re.search(r"edge-ttsd explain (\".*?\")", readme)
    assert file is not None and command is not None, "README's lexicon example"
    return file[1], json.loads(command[1])


@pytest.mark.daemon
def test_explain_shows_the_readmes_lexicon_at_work(tmp_path: Path, mandarin_voice: Path) -> None:
    lines, text = readme_lexicon()
    (tmp_path / "lexicon.txt").write_text(lines, "utf-8")
    config = write_config(
        tmp_path, mandarin_voice, text={"lexicon_file": str(tmp_path / "lexicon.txt")}
    )
    result = run_cli("explain", "--config", str(config), text)
    assert result.returncode == 0, result.stderr
    assert "[ipa: " in result.stdout and "[x-pinyin: chong2 qing4]" in result.stdout
    assert "pinyin  " in result.stdout and "ipa     " in result.stdout


@pytest.mark.daemon
def test_explain_refuses_a_bad_entry_and_bad_ssml(tmp_path: Path, mandarin_voice: Path) -> None:
    config = write_config(tmp_path, mandarin_voice, text={"lexicon": ["x = pinyin: x"]})
    result = run_cli("explain", "--config", str(config), "Hi.")
    assert result.returncode == 78 and "text.lexicon item 1: pinyin" in result.stderr
    config = write_config(tmp_path, mandarin_voice)
    result = run_cli("explain", "--config", str(config), "<speak>Hi<sub>x</sub></speak>")
    assert result.returncode == 2 and "SSML line 1, column 10: <sub> needs a alias" in result.stderr


@pytest.mark.daemon
def test_explain_shows_what_the_ssml_had_that_was_ignored(
    tmp_path: Path, mandarin_voice: Path
) -> None:
    config = write_config(tmp_path, mandarin_voice)
    text = "<speak>Hi <amazon:effect name='whispered'>there</amazon:effect></speak>"
    result = run_cli("explain", "--config", str(config), text)
    assert result.returncode == 0, result.stderr
    assert (
        "note: SSML line 1, column 11: <amazon:effect> is not supported: its content is read"
        in result.stdout
    )


@pytest.mark.daemon
def test_explain_shows_the_sounds_and_readings_read_otherwise(
    tmp_path: Path, mandarin_voice: Path
) -> None:
    """What the router did not read as written is there too: an <audio> without its
    sound, a vendor's IPA in the voice's symbols, one it cannot say as its text."""
    sounds = tmp_path / "sounds"
    sounds.mkdir()
    with wave.open(str(sounds / "chime.wav"), "wb") as chime:
        chime.setnchannels(1)
        chime.setsampwidth(2)
        chime.setframerate(16_000)
        chime.writeframes(bytes(3200))  # 0.1 s
    config = write_config(tmp_path, mandarin_voice, text={"sounds_dir": str(sounds)})
    text = (
        '<speak><audio src="chime"/>Say <phoneme alphabet="ipa" ph="ʧɝʧ">church</phoneme>,'
        ' <phoneme alphabet="ipa" ph="k☃t">cat</phoneme>.<audio src="http://x/y.mp3">Ding.'
        "</audio></speak>"
    )
    result = run_cli("explain", "--config", str(config), text)
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: SSML line 1, column 130: <audio>: 'http://x/y.mp3' is a URL: nothing is ever"
        " fetched: its content is read",
        "note: SSML line 1, column 32: ipa 'ʧɝʧ' read as 'tʃɜːtʃ' (the voice's symbols)",
        "note: SSML line 1, column 83: ipa 'k☃t': phoneme(s) ☃ in 'k☃t' are not in the voice's"
        " phoneme set (espeak-ng IPA: `edge-ttsd explain` shows a word's); its text 'cat' is"
        " read instead",
    ]
    assert "sound chime.wav (0.1 s) before" in result.stdout
    assert "[ipa: tʃɜːtʃ]" in result.stdout and "Ding." in result.stdout


# --- the daemon reloads it on SIGHUP ----------------------------------------------------------


@pytest.mark.daemon
def test_a_phoneme_no_voice_has_fails_check_lexicon_and_the_start(
    workdir: Path, broker: Broker
) -> None:
    lexicon = workdir / "lexicon.txt"
    lexicon.write_text("Door = ipa: dˈɔːɹ\nNguyen = ipa: ŋw☃ɪn\n", "utf-8")
    result = run_cli("check-lexicon", str(lexicon))
    assert result.returncode == 78
    assert f"{lexicon} line 2: 'Nguyen': phoneme(s) ☃" in result.stderr
    lexicon.write_text("Door = ipa: dˈɔːɹ\n", "utf-8")
    assert run_cli("check-lexicon", str(lexicon)).returncode == 0
    lexicon.write_text("Nguyen = ipa: ŋw☃ɪn\n", "utf-8")
    config = daemon_config(workdir, broker.port, text={"lexicon_file": str(lexicon)})
    daemon = DaemonProcess(workdir, config, env={"HOME": str(workdir)})
    try:
        daemon.start()
        assert daemon.wait_exit() == 78
        assert "line 1: 'Nguyen': phoneme(s) ☃" in daemon.log()
    finally:
        daemon.close()


@pytest.mark.daemon
def test_sighup_reloads_the_lexicon_and_keeps_it_when_the_new_one_is_bad(
    workdir: Path, broker: Broker, recorder: Recorder
) -> None:
    lexicon = workdir / "lexicon.txt"
    lexicon.write_text("Door = Gate\n", "utf-8")
    config = daemon_config(
        workdir,
        broker.port,
        audio={"sink": "wav-dir", "wav_dir": str(workdir / "wavs")},
        text={"lexicon_file": str(lexicon)},
    )
    daemon = DaemonProcess(workdir, config, env={"HOME": str(workdir)})
    try:
        daemon.start()
        daemon.wait_ready()

        def first_chunk_chars(request_id: str) -> int:
            recorder.publish("edge-tts/testpi/say", json.dumps({"text": "Door.", "id": request_id}))
            return int(
                recorder.wait_event("edge-tts/testpi/events", "finished", request_id)[
                    "first_chunk_chars"
                ]
            )

        assert first_chunk_chars("before") == len("Gate.")
        mark = daemon.log_mark()
        lexicon.write_text("Door = The back door of the garage\n", "utf-8")
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_log(r"Lexicon reloaded: 1 entries", after=mark)
        assert first_chunk_chars("after") == len("The back door of the garage.")
        mark = daemon.log_mark()
        lexicon.write_text("Door = pinyin: nope\n", "utf-8")
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_log(
            r"Lexicon not reloaded \(1 entries stay in use\): .*line 1: pinyin", after=mark
        )
        assert first_chunk_chars("still") == len("The back door of the garage.")
        mark = daemon.log_mark()
        lexicon.write_text("Door = ipa: d☃ɔːɹ\n", "utf-8")  # a symbol the voice has not
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_log(
            r"Lexicon not reloaded \(1 entries stay in use\): .*line 1: 'Door': phoneme\(s\) ☃",
            after=mark,
        )
        assert first_chunk_chars("kept") == len("The back door of the garage.")
        assert daemon.running()
    finally:
        print(daemon.log()[-4000:])
        daemon.close()
