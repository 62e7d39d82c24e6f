"""Keeping the voices warm: a short phrase per loaded voice after a quiet spell, as the
schedule's last task class, only while nothing else needs a worker."""

from __future__ import annotations

import threading

import pytest

from edge_tts.config import default_settings
from edge_tts.messages.request import Origin, SayRequest
from edge_tts.speech.jobs import Job, StepTask
from edge_tts.speech.keepwarm import KeepWarm
from edge_tts.speech.schedule import Schedule, TaskClass
from edge_tts.voice.base import SpeechOptions
from edge_tts.voice.registry import Voices

from .support.fakes import FakeOutput, FakeVoice

pytestmark = pytest.mark.unit


def rig(every_s: float) -> tuple[Schedule, KeepWarm, FakeVoice]:
    voice = FakeVoice()
    voice.load()
    voices = Voices(default_settings(), made={"default": voice})
    schedule = Schedule(4, FakeOutput(), threading.Event())
    keep_warm = KeepWarm(voices, every_s, schedule.idle_since)
    schedule.add(TaskClass.KEEP_WARM, keep_warm)
    return schedule, keep_warm, voice


def test_a_warm_up_is_due_once_the_schedule_has_been_idle_long_enough() -> None:
    schedule, keep_warm, voice = rig(every_s=0.0001)
    task = schedule.next_task()
    assert isinstance(task, StepTask) and task.name == "keep-warm"
    assert schedule.next_task(timeout=0) is None, "one warm-up at a time"
    task.run()
    schedule.task_done()
    assert keep_warm.runs == 1 and voice.calls, "the voice spoke its phrase"


def test_no_warm_up_while_a_request_waits_or_with_keep_warm_off() -> None:
    schedule, _, _ = rig(every_s=0.0001)
    request = SayRequest(id="r", text="Now.", key="r", origin=Origin("mqtt"))
    schedule.enqueue(Job(request, [], FakeVoice(), SpeechOptions()))
    task = schedule.next_task()
    assert task is not None and not isinstance(task, StepTask), "the request's plan first"
    assert schedule.next_task(timeout=0) is None, "not idle: no warm-up beside it"
    off, never, _ = rig(every_s=0)
    assert off.next_task(timeout=0) is None and not never.due()


def test_a_recent_task_puts_the_next_warm_up_off() -> None:
    schedule, keep_warm, _ = rig(every_s=3600)
    assert not keep_warm.due() and schedule.next_task(timeout=0) is None
