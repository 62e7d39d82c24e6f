"""Settings: one YAML file, validated once at start into frozen dataclasses passed down.

The dataclasses are the schema. Each field's type says what YAML value it takes, and its
metadata (see `_setting`) adds ranges and choices, so the allowed keys, their defaults and
their checks are written once. A settings object is checked in `__post_init__`, so a
bad one cannot exist however it was made; the YAML path adds unknown-key detection with
a "did you mean" hint and dotted key paths in every message.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import reprlib
import socket
import string
import types
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

PASSWORD_CREDENTIAL = "mqtt-password"  # systemd LoadCredential= name of the broker password
MQTT_PORT = 1883
MQTTS_PORT = 8883
SINKS = ("alsa", "wav-dir")
PROTOCOLS = ("auto", "5", "3.1.1")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

# Keys that are refused with advice rather than a spelling suggestion.
_REFUSED_KEYS = {
    "broker.password": (
        "the password must not be written in the config file, which is world-readable; "
        "put it in a file only the daemon can read and set broker.password_file, or give "
        f'it as the systemd credential "{PASSWORD_CREDENTIAL}" '
        f"(LoadCredential={PASSWORD_CREDENTIAL}:/path/to/file), read from "
        f"$CREDENTIALS_DIRECTORY/{PASSWORD_CREDENTIAL}"
    ),
}

_T = TypeVar("_T")
_S = TypeVar("_S", bound="_Checked")
_Check = Callable[[Any], Any]  # takes a value of the field's type, returns it normalized


class ConfigError(ValueError):
    """A setting is unknown, missing or wrong. str(err) is written for the user.

    `key` is the dotted path of the (first) bad setting; `problems` holds one error per
    bad setting when several were found at once.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key or None
        self.reason = message
        self.problems: tuple[ConfigError, ...] = (self,)


class _Invalid(ValueError):
    """A value is wrong; the caller knows which key it belongs to."""


# --- schema helpers --------------------------------------------------------------------


@dataclass(frozen=True)
class _Rules:
    checks: tuple[_Check, ...] = ()
    int_as_str: bool = False  # YAML reads `device: 2` or `protocol: 5` as a number
    must_exist: bool = False  # a file checked when loading, so a typo fails at start
    in_yaml: bool = True  # False: not a key of its own (a voice's name is its mapping key)


_RULES = "edge_tts.rules"
_NO_RULES = _Rules()


def _meta(
    *checks: _Check, int_as_str: bool = False, must_exist: bool = False, in_yaml: bool = True
) -> dict[str, _Rules]:
    return {_RULES: _Rules(checks, int_as_str, must_exist, in_yaml)}


_FILE = _meta(must_exist=True)


def _setting(default: _T, *checks: _Check, int_as_str: bool = False) -> _T:
    return field(default=default, metadata=_meta(*checks, int_as_str=int_as_str))


def _between(lo: float, hi: float | None = None) -> _Check:
    def check(value: float) -> float:
        if value < lo or (hi is not None and value > hi):
            bounds = (
                f"between {_num(lo)} and {_num(hi)}" if hi is not None else f"at least {_num(lo)}"
            )
            raise _Invalid(f"must be {bounds}, got {_num(value)}")
        return value

    return check


def _one_of(*choices: str, fold_case: bool = False) -> _Check:
    def check(value: str) -> str:
        key = value.upper() if fold_case else value
        if key in choices:
            return key
        raise _Invalid(
            f"must be one of {', '.join(choices)}, got {value!r}{_did_you_mean(key, choices)}"
        )

    return check


def _topic_level(value: str) -> str:
    """Used as one level of MQTT topics: a '/' would shift every level after it."""
    if any(c in "/+#" or c.isspace() for c in value):
        raise _Invalid(
            f"must not contain '/', '+', '#' or spaces (it is one MQTT topic level), got {value!r}"
        )
    return value


def _topic_prefix(value: str) -> str:
    if any(c in "+#" or c.isspace() for c in value):
        raise _Invalid(f"must not contain the wildcards '+' or '#', or spaces, got {value!r}")
    if value.startswith("/") or value.endswith("/") or "//" in value:
        raise _Invalid(f"must not start or end with '/' or have empty levels, got {value!r}")
    return value


def _sha256(value: str) -> str:
    digest = value.lower()
    if len(digest) != 64 or not all(c in string.hexdigits for c in digest):
        raise _Invalid(f"must be a SHA-256 digest of 64 hexadecimal digits, got {value!r}")
    return digest


# --- the settings ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Checked:
    """Base of every settings class: fields are checked however the object was made."""

    def __post_init__(self) -> None:
        _check_fields(self)
        self._check_together()

    def _check_together(self) -> None:
        """Rules that span fields; each field is already known good here."""


@dataclass(frozen=True)
class TlsSettings(_Checked):
    # Files are checked at load, so a typo fails at start rather than at the first connect.
    ca_file: Path | None = field(default=None, metadata=_FILE)  # None: the system CA store
    cert_file: Path | None = field(default=None, metadata=_FILE)  # client certificate (PEM)
    key_file: Path | None = field(default=None, metadata=_FILE)  # None: it is in cert_file
    insecure: bool = False  # skip verifying the broker's certificate: tests only

    def _check_together(self) -> None:
        if self.key_file is not None and self.cert_file is None:
            raise ConfigError("a client key needs its certificate: set cert_file too", "key_file")


@dataclass(frozen=True)
class BrokerSettings(_Checked):
    host: str = "localhost"
    port: int = _setting(0, _between(0, 65535))  # 0: 1883, or 8883 with TLS
    tls: TlsSettings | None = None
    username: str | None = None
    password_file: Path | None = field(default=None, metadata=_FILE)
    client_id: str | None = None  # None: f"edge-tts-{device_id}", stable for the session
    keepalive: int = _setting(30, _between(5, 65535))
    session_expiry: int = _setting(86400, _between(0, 2**32 - 1))
    protocol: str = _setting("auto", _one_of(*PROTOCOLS), int_as_str=True)

    def _check_together(self) -> None:
        if self.port == 0:
            object.__setattr__(self, "port", MQTT_PORT if self.tls is None else MQTTS_PORT)
        if self.password_file is not None and self.username is None:
            # The MQTT client sends a password only together with a user name.
            raise ConfigError("a password needs a user name: set username too", "password_file")

    def password(self) -> str | None:
        """The broker password, read now so that a rotated secret is used on reconnect."""
        source = self.password_file or _credential(PASSWORD_CREDENTIAL)
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
class VoiceSettings(_Checked):
    name: str = field(metadata=_meta(in_yaml=False))
    path: Path | None = None  # None: the packaged default voice, or our INT8 build of it
    sha256: str | None = _setting(None, _sha256)
    speaker: str | None = _setting(None, int_as_str=True)
    length_scale: float | None = _setting(None, _between(0.1, 10))


@dataclass(frozen=True)
class SynthesisSettings(_Checked):
    threads: int = _setting(2, _between(1, 8))
    max_concurrent: int = _setting(2, _between(1, 4))
    max_chunk_chars: int = _setting(200, _between(20, 2000))
    first_chunk_chars: int = _setting(40, _between(10, 2000))
    # Longest encoder input: its memory grows with the square of the length, and a
    # 200-character English chunk is 140-220 phonemes.
    max_phonemes: int = _setting(300, _between(50, 2000))
    preload: bool = True  # False: load a voice on its first request

    def _check_together(self) -> None:
        if self.first_chunk_chars > self.max_chunk_chars:
            raise ConfigError(
                f"must not exceed max_chunk_chars ({self.max_chunk_chars}), "
                f"got {self.first_chunk_chars}",
                "first_chunk_chars",
            )


@dataclass(frozen=True)
class QueueSettings(_Checked):
    size: int = _setting(32, _between(1, 1000))
    max_text_chars: int = _setting(2000, _between(1, 100_000))
    default_ttl: float | None = _setting(None, _between(0.1))  # seconds; older ones expire


@dataclass(frozen=True)
class AudioSettings(_Checked):
    sink: str = _setting("alsa", _one_of(*SINKS))
    device: str | None = _setting(None, int_as_str=True)  # ALSA/PortAudio name or index
    wav_dir: Path | None = None
    volume: float = _setting(1.0, _between(0, 2))
    ring_buffer_seconds: float = _setting(2.0, _between(0.2, 30))
    fade_ms: int = _setting(15, _between(0, 1000))
    block_frames: int = _setting(512, _between(16, 16384))
    latency_ms: int = _setting(50, _between(5, 2000))

    def _check_together(self) -> None:
        if self.sink == "wav-dir" and self.wav_dir is None:
            raise ConfigError('is required when sink is "wav-dir"', "wav_dir")


@dataclass(frozen=True)
class TelemetrySettings(_Checked):
    interval: float = _setting(30.0, _between(1))


@dataclass(frozen=True)
class HermesSettings(_Checked):
    enabled: bool = True
    site_id: str | None = _setting(None, _topic_level)  # None: device_id


def _default_voices() -> Mapping[str, VoiceSettings]:
    return types.MappingProxyType({"default": VoiceSettings(name="default")})


@dataclass(frozen=True)
class Settings(_Checked):
    device_id: str = field(metadata=_meta(_topic_level))
    topic_prefix: str = _setting("edge-tts", _topic_prefix)
    broker: BrokerSettings = field(default_factory=BrokerSettings)
    voices: Mapping[str, VoiceSettings] = field(default_factory=_default_voices)
    default_voice: str = "default"
    synthesis: SynthesisSettings = field(default_factory=SynthesisSettings)
    queue: QueueSettings = field(default_factory=QueueSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    hermes: HermesSettings = field(default_factory=HermesSettings)
    log_level: str = _setting("INFO", _one_of(*LOG_LEVELS, fold_case=True))
    state_dir: Path | None = None  # None: $STATE_DIRECTORY or ~/.local/state/edge-tts

    def _check_together(self) -> None:
        if self.default_voice not in self.voices:
            known = ", ".join(self.voices) or "none"
            raise ConfigError(
                f"{self.default_voice!r} is not one of the voices (configured: {known})"
                f"{_did_you_mean(self.default_voice, list(self.voices))}",
                "default_voice",
            )
        # Filled in here so every reader sees the same derived values.
        if self.broker.client_id is None:
            broker = dataclasses.replace(self.broker, client_id=f"edge-tts-{self.device_id}")
            object.__setattr__(self, "broker", broker)
        if self.hermes.site_id is None:
            object.__setattr__(
                self, "hermes", dataclasses.replace(self.hermes, site_id=self.device_id)
            )

    def resolved_state_dir(self) -> Path:
        """Where state lives: the config's, systemd's StateDirectory=, else the XDG one."""
        if self.state_dir is not None:
            return self.state_dir
        systemd = os.environ.get("STATE_DIRECTORY")
        if systemd:
            return Path(systemd.split(":")[0])
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(xdg) / "edge-tts"


# --- loading ---------------------------------------------------------------------------


def load_settings(path: Path, overrides: Mapping[str, object] | None = None) -> Settings:
    """Read and check a YAML settings file. `overrides` maps dotted keys to values
    (e.g. {"audio.volume": 0.5}); they are checked like the file's own values.
    Messages do not repeat the file name: callers print it."""
    raw = _read_yaml(path)
    if overrides:
        raw = _with_overrides(raw, overrides)
    return settings_from_mapping(raw)


def settings_from_mapping(data: Mapping[str, object]) -> Settings:
    if not isinstance(data, Mapping):
        raise ConfigError(f"the top level must be a mapping of settings, got {_show(data)}")
    return _build(Settings, {"device_id": socket.gethostname(), **data}, "")


def default_settings() -> Settings:
    return settings_from_mapping({})


def config_keys() -> tuple[str, ...]:
    """Every key a settings file may hold, dotted; `voices.*` stands for any voice name."""
    return tuple(_keys_of(Settings, ""))


def _credential(name: str) -> Path | None:
    directory = os.environ.get("CREDENTIALS_DIRECTORY")
    if not directory:
        return None
    path = Path(directory) / name
    return path if path.exists() else None


class _StrictLoader(yaml.SafeLoader):
    """safe_load, except that a key given twice is an error: PyYAML keeps the last silently."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = str(key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def _read_yaml(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read the settings file: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text (byte {err.start})") from err
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # safe: a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        raise ConfigError(_yaml_problem(err)) from err
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {err}") from err
    if data is None:  # empty, or only comments
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping of settings, got {_show(data)}")
    return data


def _yaml_problem(err: yaml.MarkedYAMLError) -> str:
    mark = err.problem_mark or err.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    context = f" ({err.context})" if err.context else ""
    return f"YAML syntax error{where}: {err.problem or 'cannot parse'}{context}"


def _with_overrides(
    raw: Mapping[str, object], overrides: Mapping[str, object]
) -> dict[str, object]:
    merged = dict(raw)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = merged
        for depth, part in enumerate(parents):
            child = node.get(part) or {}
            if not isinstance(child, Mapping):
                at = ".".join(parents[: depth + 1])
                raise ConfigError(f"is not a mapping, so {dotted} cannot be set", at)
            node[part] = copy = dict(child)  # copied: the caller's mappings stay untouched
            node = copy
        node[leaf] = value
    return merged


# --- building and checking -------------------------------------------------------------


def _build(cls: type[_S], raw: object, path: str, **fixed: object) -> _S:
    """`cls` from a YAML mapping at dotted `path`. Every bad value is reported at once;
    rules across fields are checked only once each field is good."""
    if raw is None:  # `audio:` with nothing under it
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be a mapping of settings, got {_show(raw)}", path)
    known = {f.name: f for f in dataclasses.fields(cls) if _rules_of(f).in_yaml}
    hints = get_type_hints(cls)
    problems = [_unknown(path, key, list(known)) for key in raw if key not in known]
    kwargs: dict[str, object] = dict(fixed)
    for name, value in raw.items():
        if name in known:
            try:
                kwargs[name] = _from_yaml(known[name], hints[name], value, _join(path, name))
            except ConfigError as err:
                problems.append(err)
    if problems:
        raise _combine(problems)
    try:
        return cls(**kwargs)
    except ConfigError as err:
        raise _under(err, path) from None


def _from_yaml(f: dataclasses.Field[Any], hint: Any, value: object, path: str) -> object:
    kind = _non_none(hint)
    if value is None and kind is not hint:
        return None
    if _is_section(kind):
        return _build(kind, value, path)
    if get_origin(kind) is Mapping:
        return _build_named(get_args(kind)[1], value, path)
    rules = _rules_of(f)
    try:
        clean = _coerce(hint, value, rules)
    except _Invalid as err:
        raise ConfigError(str(err), path) from None
    if rules.must_exist:
        _check_file(clean, path)
    return clean


def _build_named(cls: type[_S], raw: object, path: str) -> dict[str, _S]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be a mapping of name: settings, got {_show(raw)}", path)
    built: dict[str, _S] = {}
    problems: list[ConfigError] = []
    for name, item in raw.items():
        try:
            if not isinstance(name, str) or not name.strip():
                raise ConfigError("a name must be non-empty text", _join(path, str(name)))
            built[name] = _build(cls, item, _join(path, name), name=name)
        except ConfigError as err:
            problems.append(err)
    if problems:
        raise _combine(problems)
    return built


def _check_fields(obj: _Checked) -> None:
    hints = get_type_hints(type(obj))
    problems: list[ConfigError] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        try:
            clean = _coerce(hints[f.name], value, _rules_of(f))
        except _Invalid as err:
            problems.append(ConfigError(str(err), f.name))
            continue
        if clean is not value:
            object.__setattr__(obj, f.name, clean)
    if problems:
        raise _combine(problems)


def _coerce(hint: Any, value: object, rules: _Rules) -> object:
    kind = _non_none(hint)
    if value is None and kind is not hint:
        return None
    if _is_section(kind):
        if not isinstance(value, kind):
            raise _Invalid(f"must be {kind.__name__}, got {_show(value)}")
        return value
    if get_origin(kind) is Mapping:
        return _frozen_mapping(get_args(kind)[1], value)
    clean = _SCALARS[kind](value, rules)
    for check in rules.checks:
        clean = check(clean)
    return clean


def _check_file(file: object, path: str) -> None:
    if not isinstance(file, Path):
        return
    if not file.is_file():
        reason = "is a directory" if file.is_dir() else "does not exist"
        raise ConfigError(f"{file} {reason}", path)
    if not os.access(file, os.R_OK):
        raise ConfigError(f"{file} is not readable by this user", path)


def _frozen_mapping(kind: type, value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _Invalid(f"must be a mapping of name: settings, got {_show(value)}")
    for name, item in value.items():
        if not isinstance(name, str) or not name.strip():
            raise _Invalid(f"names must be non-empty text, got {_show(name)}")
        if not isinstance(item, kind):
            raise _Invalid(f"{name} must be {kind.__name__}, got {_show(item)}")
    return types.MappingProxyType(dict(value))


# --- scalar types ----------------------------------------------------------------------
# Strict on purpose: a bool is not a number and a number is not text, so `threads: yes`
# or `volume: "loud"` fail at start instead of meaning something surprising later.


def _as_bool(value: object, _rules: _Rules) -> bool:
    if isinstance(value, bool):
        return value
    raise _Invalid(f"must be true or false, got {_show(value)}")


def _as_int(value: object, _rules: _Rules) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Invalid(f"must be a whole number, got {_show(value)}")


def _as_float(value: object, _rules: _Rules) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise _Invalid(f"must be a number, got {_show(value)}")


def _as_str(value: object, rules: _Rules) -> str:
    if rules.int_as_str and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, str):
        raise _Invalid("must not be empty")
    hint = f' (quote it: "{value}")' if isinstance(value, int | float | bool) else ""
    raise _Invalid(f"must be text, got {_show(value)}{hint}")


def _as_path(value: object, _rules: _Rules) -> Path:
    if isinstance(value, Path):
        return value.expanduser()
    if isinstance(value, str) and value.strip():
        return Path(value).expanduser()
    raise _Invalid(f"must be a path, got {_show(value)}")


_SCALARS: dict[object, Callable[[object, _Rules], object]] = {
    bool: _as_bool,
    int: _as_int,
    float: _as_float,
    str: _as_str,
    Path: _as_path,
}


# --- small helpers ---------------------------------------------------------------------


def _keys_of(cls: type[_Checked], prefix: str) -> Iterator[str]:
    for f in dataclasses.fields(cls):
        if not _rules_of(f).in_yaml:
            continue
        key = _join(prefix, f.name)
        yield key
        kind = _non_none(get_type_hints(cls)[f.name])
        if _is_section(kind):
            yield from _keys_of(kind, key)
        elif get_origin(kind) is Mapping:
            yield f"{key}.*"
            yield from _keys_of(get_args(kind)[1], f"{key}.*")


def _rules_of(f: dataclasses.Field[Any]) -> _Rules:
    rules = f.metadata.get(_RULES)
    return rules if isinstance(rules, _Rules) else _NO_RULES


def _is_section(kind: object) -> TypeGuard[type[_Checked]]:
    return isinstance(kind, type) and issubclass(kind, _Checked)


def _non_none(hint: Any) -> Any:
    """`X` for `X | None`, else the hint itself."""
    if get_origin(hint) in (Union, types.UnionType):
        (kind,) = [arg for arg in get_args(hint) if arg is not type(None)]
        return kind
    return hint


def _unknown(path: str, key: object, known: list[str]) -> ConfigError:
    dotted = _join(path, str(key))
    if dotted in _REFUSED_KEYS:
        return ConfigError(_REFUSED_KEYS[dotted], dotted)
    close = _closest(str(key), known)
    if close:
        return ConfigError(f'unknown setting; did you mean "{_join(path, close)}"?', dotted)
    return ConfigError(f"unknown setting; valid here: {', '.join(known)}", dotted)


def _closest(value: str, choices: list[str] | tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(value, choices, n=1)
    # difflib misses abbreviations such as `ca` for `ca_file`.
    close += [choice for choice in choices if value and choice.startswith(value)]
    return close[0] if close else None


def _did_you_mean(value: str, choices: list[str] | tuple[str, ...]) -> str:
    close = _closest(value, choices)
    return f'; did you mean "{close}"?' if close else ""


def _combine(errors: list[ConfigError]) -> ConfigError:
    problems = [p for err in errors for p in err.problems]
    if len(problems) == 1:
        return problems[0]
    combined = ConfigError(f"{len(problems)} problems:" + "".join(f"\n  {p}" for p in problems))
    combined.key = problems[0].key
    combined.problems = tuple(problems)
    return combined


def _under(err: ConfigError, prefix: str) -> ConfigError:
    """`err` from a nested settings class, with keys made relative to the whole file."""
    if not prefix:
        return err
    return _combine([ConfigError(p.reason, _join(prefix, p.key or "")) for p in err.problems])


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path and name else path or name


def _show(value: object) -> str:
    kinds: dict[type, str] = {
        bool: "a boolean",
        int: "a whole number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "a mapping",
    }
    if value is None:
        return "nothing (null)"
    return f"{reprlib.repr(value)} ({kinds.get(type(value), type(value).__name__)})"


def _num(value: float | None) -> str:
    return str(int(value)) if value is not None and float(value).is_integer() else str(value)
