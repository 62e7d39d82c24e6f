"""The phrase cache as the daemon runs it: the store in `<state_dir>/cache`, the lookup
the pipeline calls, the pre-renderer, and what health and telemetry read from them. With
`cache.enabled: false` all of it is absent and the pipeline synthesizes every chunk."""

from __future__ import annotations

import logging

from ..cache.serving import PhraseCache
from ..cache.store import CacheStore
from ..config import CacheSettings, Settings
from ..core.telemetry import Telemetry
from ..voice.registry import Voices
from .prerender import Prerenderer
from .routing import Router
from .schedule import Schedule, TaskClass

_LOGGER = logging.getLogger(__name__)

MIB = 2**20


class CacheService:
    def __init__(self, settings: Settings, telemetry: Telemetry) -> None:
        self._settings = settings
        cache = settings.cache
        self.store: CacheStore | None = None
        self.lookup: PhraseCache | None = None  # what the pipeline calls
        self.prerenderer: Prerenderer | None = None
        self._schedule: Schedule | None = None
        if cache.enabled:
            directory = settings.resolved_state_dir() / "cache"
            self.store = CacheStore(directory, int(cache.max_mb * MIB), on_change=self._changed)
            self.lookup = PhraseCache(self.store, telemetry)

    def attach(self, schedule: Schedule, voices: Voices, router: Router) -> None:
        """The pre-renderer needs the pipeline (made after the lookup it is given)."""
        if self.store is None:
            return
        phrases = load_phrases(self._settings.cache)
        self._schedule = schedule
        self.prerenderer = Prerenderer(
            phrases, self.store, voices, router, self._settings.synthesis, schedule.busy_since
        )

    def start(self) -> None:
        """After the voices are loaded, before MQTT: the store is indexed and the build
        that renders missing phrases is loaded before the first request can come."""
        if self.store is not None:
            self.store.open()
        if self.prerenderer is not None and self._schedule is not None:
            self.prerenderer.prepare()
            self._schedule.add(TaskClass.PRERENDER, self.prerenderer)
            self.prerenderer.attach(self._schedule.wake)

    def stop(self) -> None:
        if self.prerenderer is not None:
            self.prerenderer.stop()

    @property
    def problem(self) -> str | None:
        return self.store.problem if self.store is not None else None

    def recover(self) -> None:
        if self.store is not None:
            self.store.recover()

    def gauges(self) -> dict[str, object]:
        if self.lookup is None:
            return {"status": "disabled"}
        found = self.lookup.stats()
        if self.prerenderer is not None:
            found["prerender"] = self.prerenderer.progress()
        return found

    def _changed(self) -> None:
        if self.prerenderer is not None:
            self.prerenderer.wake()


def load_phrases(settings: CacheSettings) -> list[str]:
    """`phrases`, then the lines of `phrases_file` (no blanks, no "#" comments), once each."""
    texts = list(settings.phrases)
    if settings.phrases_file is not None:
        try:
            lines = settings.phrases_file.read_text("utf-8").splitlines()
        except (OSError, UnicodeError) as err:
            _LOGGER.error("Cannot read cache.phrases_file %s: %s", settings.phrases_file, err)
            lines = []
        texts += [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return list(dict.fromkeys(texts))
