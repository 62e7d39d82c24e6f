"""Parts start in order and stop in reverse, also when one of them fails."""

from __future__ import annotations

import pytest

from edge_tts.core.lifecycle import Part, Parts

pytestmark = pytest.mark.unit


class Log:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def part(self, name: str, fail_start: bool = False, fail_stop: bool = False) -> Part:
        def start() -> None:
            self.calls.append(f"start {name}")
            if fail_start:
                raise RuntimeError(f"{name} cannot start")

        def stop() -> None:
            self.calls.append(f"stop {name}")
            if fail_stop:
                raise RuntimeError(f"{name} cannot stop")

        return Part(name, start, stop)


def test_starts_in_order_and_stops_in_reverse_once() -> None:
    log = Log()
    parts = Parts([log.part("a"), log.part("b"), log.part("c")])
    parts.start()
    assert parts.started == ("a", "b", "c")
    parts.stop()
    parts.stop()
    assert log.calls == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]


def test_a_part_that_fails_to_start_stops_the_started_ones_in_reverse() -> None:
    log = Log()
    parts = Parts([log.part("a"), log.part("b"), log.part("c", fail_start=True), log.part("d")])
    with pytest.raises(RuntimeError, match="c cannot start"):
        parts.start()
    assert log.calls == ["start a", "start b", "start c", "stop b", "stop a"]
    assert parts.started == ()


def test_a_part_that_fails_to_stop_does_not_keep_the_others_running() -> None:
    log = Log()
    parts = Parts([log.part("a"), log.part("b", fail_stop=True), log.part("c")])
    parts.start()
    parts.stop()
    assert log.calls[3:] == ["stop c", "stop b", "stop a"]
