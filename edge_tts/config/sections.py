"""The settings schema: one frozen dataclass per section of the YAML file.

Each field's type says what YAML value it takes, its default is the one default of that
setting in the code base, and its metadata (see `checks.setting`) adds ranges and choices.
"""

from __future__ import annotations

import dataclasses
import os
import string
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .checks import (
    FILE,
    Checked,
    ConfigError,
    Invalid,
    between,
    did_you_mean,
    meta,
    one_of,
    setting,
)
from .credentials import PASSWORD_CREDENTIAL, credential
from .servers import HttpSettings, WyomingSettings

MQTT_PORT = 1883
MQTTS_PORT = 8883
SINKS = ("alsa", "wav-dir")
PROTOCOLS = ("auto", "5", "3.1.1")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
GENDERS = ("female", "male", "neutral")  # SSML's <voice gender>


def _topic_level(value: str) -> str:
    """Used as one level of MQTT topics: a '/' would shift every level after it."""
    if any(c in "/+#" or c.isspace() for c in value):
        raise Invalid(
            f"must not contain '/', '+', '#' or spaces (it is one MQTT topic level), got {value!r}"
        )
    return value


def _topic_prefix(value: str) -> str:
    if any(c in "+#" or c.isspace() for c in value):
        raise Invalid(f"must not contain the wildcards '+' or '#', or spaces, got {value!r}")
    if value.startswith("/") or value.endswith("/") or "//" in value:
        raise Invalid(f"must not start or end with '/' or have empty levels, got {value!r}")
    return value


AUTO_BUILD = "auto"


def _build_name(value: str) -> str:
    if not value or not all(c.isalnum() or c == "-" for c in value):
        raise Invalid(f"must be auto, fp32 or a quantization scheme's name, got {value!r}")
    return value


def _sha256(value: str) -> str:
    digest = value.lower()
    if len(digest) != 64 or not all(c in string.hexdigits for c in digest):
        raise Invalid(f"must be a SHA-256 digest of 64 hexadecimal digits, got {value!r}")
    return digest


@dataclass(frozen=True)
class TlsSettings(Checked):
    # Files are checked at load, so a typo fails at start rather than at the first connect.
    ca_file: Path | None = field(default=None, metadata=FILE)  # None: the system CA store
    cert_file: Path | None = field(default=None, metadata=FILE)  # client certificate (PEM)
    key_file: Path | None = field(default=None, metadata=FILE)  # None: it is in cert_file
    insecure: bool = False  # skip verifying the broker's certificate: tests only

    def _check_together(self) -> None:
        if self.key_file is not None and self.cert_file is None:
            raise ConfigError("a client key needs its certificate: set cert_file too", "key_file")


@dataclass(frozen=True)
class BrokerSettings(Checked):
    host: str = "localhost"
    port: int = setting(0, between(0, 65535))  # 0: 1883, or 8883 with TLS
    tls: TlsSettings | None = None
    username: str | None = None
    password_file: Path | None = field(default=None, metadata=FILE)
    client_id: str | None = None  # None: f"edge-tts-{device_id}", stable for the session
    keepalive: int = setting(30, between(5, 65535))
    session_expiry: int = setting(86400, between(0, 2**32 - 1))
    protocol: str = setting("auto", one_of(*PROTOCOLS), int_as_str=True)

    def _check_together(self) -> None:
        if self.port == 0:
            object.__setattr__(self, "port", MQTT_PORT if self.tls is None else MQTTS_PORT)
        if self.password_file is not None and self.username is None:
            # The MQTT client sends a password only together with a user name.
            raise ConfigError("a password needs a user name: set username too", "password_file")

    def password(self) -> str | None:
        """The broker password, read now so that a rotated secret is used on reconnect."""
        source = self.password_file or credential(PASSWORD_CREDENTIAL)
        if source is None:
            return None
        key = "broker.password_file" if self.password_file else None
        try:
            return source.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeError) as err:
            reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
            raise ConfigError(
                f"cannot read the MQTT password from {source}: {reason}", key
            ) from err


@dataclass(frozen=True)
class VoiceSettings(Checked):
    name: str = field(metadata=meta(in_yaml=False))
    path: Path | None = None  # None: the packaged default voice, or our INT8 build of it
    sha256: str | None = setting(None, _sha256)
    speaker: str | None = setting(None, int_as_str=True)
    length_scale: float | None = setting(None, between(0.1, 10))
    # Which build to load: "auto" takes the one `edge-ttsd tune` chose on this machine (else
    # the configured file); "fp32" or a quantization scheme's name pins one.
    build: str = setting(AUTO_BUILD, _build_name)
    # Who it sounds like, for SSML's <voice gender="female">: a voice file does not say.
    gender: str | None = setting(None, one_of(*GENDERS))


@dataclass(frozen=True)
class SynthesisSettings(Checked):
    threads: int = setting(2, between(1, 8))
    max_concurrent: int = setting(2, between(1, 4))
    max_chunk_chars: int = setting(200, between(20, 2000))
    first_chunk_chars: int = setting(40, between(10, 2000))
    # Longest encoder input: its memory grows with the square of the length, and a
    # 200-character English chunk is 140-220 phonemes.
    max_phonemes: int = setting(300, between(50, 2000))
    preload: bool = True  # False: load a voice on its first request
    # After this many idle seconds each loaded voice speaks a short phrase to itself, so
    # the first request after a quiet spell finds it warm (speech/keepwarm.py); 0: never.
    keep_warm_s: float = setting(300.0, between(0, 86400))

    def _check_together(self) -> None:
        if self.first_chunk_chars > self.max_chunk_chars:
            raise ConfigError(
                f"must not exceed max_chunk_chars ({self.max_chunk_chars}), "
                f"got {self.first_chunk_chars}",
                "first_chunk_chars",
            )


@dataclass(frozen=True)
class QueueSettings(Checked):
    size: int = setting(32, between(1, 1000))
    max_text_chars: int = setting(2000, between(1, 100_000))
    default_ttl: float | None = setting(None, between(0.1))  # seconds; older ones expire


@dataclass(frozen=True)
class AudioSettings(Checked):
    sink: str = setting("alsa", one_of(*SINKS))
    device: str | None = setting(None, int_as_str=True)  # ALSA/PortAudio name or index
    wav_dir: Path | None = None
    volume: float = setting(1.0, between(0, 2))
    ring_buffer_seconds: float = setting(2.0, between(0.2, 30))
    fade_ms: int = setting(15, between(0, 1000))
    block_frames: int = setting(512, between(16, 16384))
    latency_ms: int = setting(50, between(5, 2000))
    # Silence before the speech of audio another player opens per request (WAV files,
    # Wyoming responses): a device that wakes late clips the first word. Not on ALSA.
    lead_in_ms: int = setting(250, between(0, 5000))

    def _check_together(self) -> None:
        if self.sink == "wav-dir" and self.wav_dir is None:
            raise ConfigError('is required when sink is "wav-dir"', "wav_dir")


@dataclass(frozen=True)
class TelemetrySettings(Checked):
    interval: float = setting(30.0, between(1))


@dataclass(frozen=True)
class HermesSettings(Checked):
    enabled: bool = True
    site_id: str | None = setting(None, _topic_level)  # None: device_id


@dataclass(frozen=True)
class HomeAssistantSettings(Checked):
    discovery: bool = True  # announce the device and its controls by MQTT discovery
    prefix: str = setting("homeassistant", _topic_prefix)  # HA's discovery prefix


@dataclass(frozen=True)
class CacheSettings(Checked):
    """The phrase cache (edge_tts/cache/): synthesized chunks kept on disk in the state
    directory, and `phrases` rendered ahead while the daemon is idle."""

    enabled: bool = True
    max_mb: float = setting(50.0, between(1, 100_000))  # MiB on disk, LRU beyond
    phrases: tuple[str, ...] = ()
    phrases_file: Path | None = field(default=None, metadata=FILE)  # one phrase a line


def _directory(value: Path) -> Path:
    if not value.is_dir():
        raise Invalid(f"{value} is not a directory")
    return value


@dataclass(frozen=True)
class TextSettings(Checked):
    """The text front-end: the pronunciation lexicon (edge_tts/text/lexicon.py), entries
    in its line format ("I-95 = I ninety-five", "重庆 = pinyin: chong2 qing4"), inline
    and/or one a line in a file; reloaded on SIGHUP (`systemctl reload edge-tts`)."""

    lexicon: tuple[str, ...] = ()
    lexicon_file: Path | None = field(default=None, metadata=FILE)
    # Markdown and inline HTML dropped from plain text (text/markup.py): what language
    # models write is read as its words, not "asterisk asterisk". False: read literally.
    strip_markup: bool = True
    # The most silence SSML's breaks may add up to in one request, in seconds; more is
    # refused with the reason (104 breaks of 10 s fit in 2,000 characters: 17 minutes).
    max_silence_s: float = setting(30.0, between(0, 600))
    # The WAV files SSML's <audio src="chime.wav"> plays, by plain name (text/ssml.py);
    # None: none, every <audio> reads its fallback content. Nothing is ever fetched.
    sounds_dir: Path | None = field(default=None, metadata=meta(_directory))


def _default_voices() -> Mapping[str, VoiceSettings]:
    return types.MappingProxyType({"default": VoiceSettings(name="default")})


@dataclass(frozen=True)
class Settings(Checked):
    device_id: str = field(metadata=meta(_topic_level))
    topic_prefix: str = setting("edge-tts", _topic_prefix)
    broker: BrokerSettings = field(default_factory=BrokerSettings)
    voices: Mapping[str, VoiceSettings] = field(default_factory=_default_voices)
    default_voice: str = "default"
    # Which voice speaks a language ("zh": "mandarin"); unset, a language goes to the
    # default voice when it speaks it, else to the first voice that does.
    languages: Mapping[str, str] = field(default_factory=lambda: types.MappingProxyType({}))
    synthesis: SynthesisSettings = field(default_factory=SynthesisSettings)
    queue: QueueSettings = field(default_factory=QueueSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    hermes: HermesSettings = field(default_factory=HermesSettings)
    homeassistant: HomeAssistantSettings = field(default_factory=HomeAssistantSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    text: TextSettings = field(default_factory=TextSettings)
    wyoming: WyomingSettings = field(default_factory=WyomingSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    log_level: str = setting("INFO", one_of(*LOG_LEVELS, fold_case=True))
    state_dir: Path | None = None  # None: $STATE_DIRECTORY or ~/.local/state/edge-tts

    def _check_together(self) -> None:
        if self.default_voice not in self.voices:
            known = ", ".join(self.voices) or "none"
            raise ConfigError(
                f"{self.default_voice!r} is not one of the voices (configured: {known})"
                f"{did_you_mean(self.default_voice, list(self.voices))}",
                "default_voice",
            )
        for code, voice in self.languages.items():
            if voice not in self.voices:
                known = ", ".join(self.voices)
                raise ConfigError(
                    f"{voice!r} is not one of the voices (configured: {known})"
                    f"{did_you_mean(voice, list(self.voices))}",
                    f"languages.{code}",
                )
        # Derived here, and only here, so every reader sees the same values.
        if self.broker.client_id is None:
            broker = dataclasses.replace(self.broker, client_id=f"edge-tts-{self.device_id}")
            object.__setattr__(self, "broker", broker)
        if self.hermes.site_id is None:
            object.__setattr__(
                self, "hermes", dataclasses.replace(self.hermes, site_id=self.device_id)
            )

    @property
    def client_id(self) -> str:
        """`broker.client_id`, never None: `_check_together` derived it when unset."""
        assert self.broker.client_id is not None
        return self.broker.client_id

    @property
    def site_id(self) -> str:
        """`hermes.site_id`, never None: `_check_together` derived it when unset."""
        assert self.hermes.site_id is not None
        return self.hermes.site_id

    def resolved_state_dir(self) -> Path:
        """Where state lives: the config's, systemd's StateDirectory=, else the XDG one."""
        if self.state_dir is not None:
            return self.state_dir
        systemd = os.environ.get("STATE_DIRECTORY")
        if systemd:
            return Path(systemd.split(":")[0])
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(xdg) / "edge-tts"
