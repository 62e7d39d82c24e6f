"""Malformed SSML (tests/support/ssml_cases.py): each document is refused by the parser
with a reason and where, and, sent to the daemon, gets exactly one event: `rejected`.
What is only unsupported is read as its content, the same words as without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edge_tts.text.document import Audio, Span
from edge_tts.text.ssml import SsmlError, parse, parse_noted

from .support.broker import Broker, Recorder
from .support.daemon_proc import DaemonProcess, daemon_config
from .support.ssml_cases import VALID, cases, lenient_cases

CASES = list(cases())
LENIENT = list(lenient_cases())


@pytest.mark.unit
def test_the_valid_documents_the_cases_come_from_parse() -> None:
    for document in VALID:
        assert parse(document, max_chars=2000)


@pytest.mark.unit
def test_there_are_hundreds_of_cases_each_different() -> None:
    documents = [document for _, document in CASES]
    assert len(documents) > 200 and len(set(documents)) == len(documents)


@pytest.mark.unit
@pytest.mark.parametrize(("what", "document"), CASES, ids=[what for what, _ in CASES])
def test_each_case_is_refused_saying_where(what: str, document: str) -> None:
    with pytest.raises(SsmlError, match=r"^SSML (line \d+, column \d+: |is not well-formed)"):
        parse(document, max_chars=2000)


def _words(document: str) -> str:
    pieces, _ = parse_noted(document, max_chars=2000)
    return "".join(p.text for p in pieces if isinstance(p, Span))


@pytest.mark.unit
@pytest.mark.parametrize(("what", "document", "text"), LENIENT, ids=[w for w, _, _ in LENIENT])
def test_each_unsupported_thing_is_read_as_its_content(what: str, document: str, text: str) -> None:
    """A foreign element or attribute in a valid document changes none of its words; a
    vendor's element says its content."""
    pieces, notes = parse_noted(document, max_chars=2000)
    flat = [q for p in pieces for q in (p.fallback if isinstance(p, Audio) else (p,))]
    said = "".join(p.text for p in flat if isinstance(p, Span))  # no sounds: <audio>'s text
    if what.startswith("doc "):  # "doc 2 <bogus> in <voice>": VALID[2] with a <bogus/>
        assert said == _words(VALID[int(what.split()[1])])
        assert notes, what  # what was ignored is noted
    else:
        assert said == text


@pytest.mark.daemon
def test_every_case_sent_to_the_daemon_gets_one_rejected_and_nothing_else(
    workdir: Path, broker: Broker, recorder: Recorder
) -> None:
    config = daemon_config(
        workdir, broker.port, audio={"sink": "wav-dir", "wav_dir": str(workdir / "wavs")}
    )
    daemon = DaemonProcess(workdir, config, env={"HOME": str(workdir)})
    sample = CASES[::4]  # a quarter of them: the parser is the same as above
    try:
        daemon.start()
        daemon.wait_ready()
        for n, (_, document) in enumerate(sample):
            payload = {"id": f"bad-{n}", "text": document, "text_format": "ssml"}
            recorder.publish("edge-tts/testpi/say", json.dumps(payload))
        recorder.publish("edge-tts/testpi/say", json.dumps({"text": "Done.", "id": "probe"}))
        recorder.wait_event("edge-tts/testpi/events", "finished", "probe")
        events = recorder.events("edge-tts/testpi/events")
        for n, (what, _) in enumerate(sample):
            kinds = [e["event"] for e in events if e.get("id") == f"bad-{n}"]
            assert kinds == ["rejected"], what
        assert daemon.running()
    finally:
        print(daemon.log()[-3000:])
        daemon.close()
