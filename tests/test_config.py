"""Settings: a bad file is refused at start with a message that names the key."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from edge_tts import config
from edge_tts.config import (
    AudioSettings,
    BrokerSettings,
    ConfigError,
    Settings,
    TlsSettings,
    config_keys,
    default_settings,
    load_settings,
    settings_from_mapping,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILE = REPO / "config" / "edge-tts.yaml"
EXAMPLE_FILE = REPO / "config" / "edge-tts.example.yaml"
DIGEST = "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The machine running the tests must not leak into them.
    monkeypatch.setattr("edge_tts.config.loader.socket.gethostname", lambda: "test-pi")
    for var in ("CREDENTIALS_DIRECTORY", "STATE_DIRECTORY", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "edge-tts.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def refused(data: Mapping[str, object]) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        settings_from_mapping(data)
    return err.value


def attribute(settings: object, dotted: str) -> object:
    """`attribute(s, "voices.default.path")` is `s.voices["default"].path`."""
    for name in dotted.split("."):
        settings = settings[name] if isinstance(settings, Mapping) else getattr(settings, name)
    return settings


# --- defaults and the shipped files ----------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("device_id", "test-pi"),
        ("topic_prefix", "edge-tts"),
        ("broker.host", "localhost"),
        ("broker.port", 1883),
        ("broker.tls", None),
        ("broker.username", None),
        ("broker.client_id", "edge-tts-test-pi"),
        ("broker.keepalive", 30),
        ("broker.session_expiry", 86400),
        ("broker.protocol", "auto"),
        ("default_voice", "default"),
        ("synthesis.threads", 2),
        ("synthesis.max_concurrent", 2),
        ("synthesis.max_chunk_chars", 200),
        ("synthesis.first_chunk_chars", 40),
        ("synthesis.preload", True),
        ("queue.size", 32),
        ("queue.max_text_chars", 2000),
        ("queue.default_ttl", None),
        ("audio.sink", "alsa"),
        ("audio.device", None),
        ("audio.volume", 1.0),
        ("audio.ring_buffer_seconds", 2.0),
        ("audio.fade_ms", 15),
        ("audio.block_frames", 512),
        ("audio.latency_ms", 50),
        ("telemetry.interval", 30.0),
        ("hermes.enabled", True),
        ("hermes.site_id", "test-pi"),
        ("log_level", "INFO"),
        ("state_dir", None),
    ],
)
def test_defaults(key: str, expected: object) -> None:
    assert attribute(default_settings(), key) == expected


@pytest.mark.unit
def test_default_voices() -> None:
    voices = default_settings().voices
    assert list(voices) == ["default"]
    assert voices["default"] == config.VoiceSettings(name="default")


@pytest.mark.unit
@pytest.mark.parametrize("text", ["", "\n", "# nothing but a comment\n", "---\n"])
def test_empty_file_is_all_defaults(tmp_path: Path, text: str) -> None:
    assert load_settings(write(tmp_path, text)) == default_settings()


@pytest.mark.unit
@pytest.mark.parametrize("path", [DEFAULT_FILE, EXAMPLE_FILE], ids=["default", "example"])
def test_shipped_files_load_and_state_the_real_defaults(path: Path) -> None:
    assert load_settings(path) == default_settings()


# The example writes each key as `key: value`, or commented out as `# key: value` where the
# `#` sits at the key's indentation; prose comments never start with `word:`.
_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[a-z][a-z0-9_]*):(?:\s|$)")
_COMMENTED = re.compile(r"^(?P<indent> *)# (?P<rest>.*)$")


def example_keys() -> dict[str, bool]:
    """Dotted keys of the example, commented-out ones included: whether each is explained."""
    any_name = [key.removesuffix(".*") for key in config_keys() if key.endswith(".*")]
    keys: dict[str, bool] = {}
    stack: list[tuple[int, str]] = []
    after_prose = False
    for raw in EXAMPLE_FILE.read_text(encoding="utf-8").splitlines():
        commented = _COMMENTED.match(raw)
        line = commented["indent"] + commented["rest"] if commented else raw
        match = _KEY_LINE.match(line)
        if not match:
            after_prose = raw.lstrip().startswith("#")
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        dotted = ".".join(key for _, key in stack)
        for prefix in any_name:  # `voices.kitchen.path` documents `voices.*.path`
            dotted = re.sub(rf"^{re.escape(prefix)}\.[^.]+", f"{prefix}.*", dotted)
        keys.setdefault(dotted, after_prose or " #" in line[match.end() :])
        after_prose = False
    return keys


@pytest.mark.unit
def test_example_documents_every_key_and_only_real_ones() -> None:
    documented = set(example_keys())
    known = set(config_keys())
    assert sorted(known - documented) == [], "keys missing from the example"
    assert sorted(documented - known) == [], "keys in the example that do not exist"


@pytest.mark.unit
def test_every_key_in_the_example_has_a_comment() -> None:
    assert [key for key, explained in example_keys().items() if not explained] == []


# --- unknown keys ----------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("data", "key", "suggestion"),
    [
        ({"audio": {"volum": 0.5}}, "audio.volum", "audio.volume"),
        ({"log_levle": "INFO"}, "log_levle", "log_level"),
        ({"brokr": {"host": "x"}}, "brokr", "broker"),
        ({"synthesis": {"thread": 2}}, "synthesis.thread", "synthesis.threads"),
        ({"broker": {"tls": {"ca": "x"}}}, "broker.tls.ca", "broker.tls.ca_file"),
        ({"voices": {"default": {"sha": DIGEST}}}, "voices.default.sha", "voices.default.sha256"),
        ({"broker": {"passwordfile": "x"}}, "broker.passwordfile", "broker.password_file"),
    ],
)
def test_unknown_key_names_its_path_and_the_closest_key(
    data: Mapping[str, object], key: str, suggestion: str
) -> None:
    err = refused(data)
    assert err.key == key
    assert str(err) == f'{key}: unknown setting; did you mean "{suggestion}"?'


@pytest.mark.unit
def test_unknown_key_without_a_close_match_lists_the_valid_ones() -> None:
    assert "valid here: enabled, site_id" in str(refused({"hermes": {"zzz": 1}}))


@pytest.mark.unit
def test_unknown_key_in_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, "audio:\n  sink: alsa\n  volum: 0.5\n")
    with pytest.raises(ConfigError, match=r'audio\.volum: .*did you mean "audio\.volume"'):
        load_settings(path)


# --- wrong types and values ------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("data", "key", "fragment"),
    [
        ({"synthesis": {"threads": "2"}}, "synthesis.threads", "whole number"),
        ({"synthesis": {"threads": 2.5}}, "synthesis.threads", "whole number"),
        ({"queue": {"size": True}}, "queue.size", "whole number"),  # a bool is not an int
        ({"audio": {"volume": "loud"}}, "audio.volume", "must be a number"),
        ({"audio": {"volume": True}}, "audio.volume", "must be a number"),
        ({"audio": {"volume": float("nan")}}, "audio.volume", "must be a number"),
        ({"telemetry": {"interval": None}}, "telemetry.interval", "null"),
        ({"hermes": {"enabled": "yes"}}, "hermes.enabled", "true or false"),
        ({"hermes": {"enabled": 1}}, "hermes.enabled", "true or false"),
        ({"broker": {"host": 5}}, "broker.host", "must be text"),
        ({"broker": {"host": " "}}, "broker.host", "must not be empty"),
        ({"device_id": 42}, "device_id", 'quote it: "42"'),
        ({"state_dir": 5}, "state_dir", "must be a path"),
        ({"audio": ["alsa"]}, "audio", "mapping"),
        ({"broker": {"tls": "yes"}}, "broker.tls", "mapping"),
        ({"voices": ["default"]}, "voices", "mapping"),
        ({"voices": {"default": 3}}, "voices.default", "mapping"),
    ],
)
def test_wrong_type_names_the_key(data: Mapping[str, object], key: str, fragment: str) -> None:
    err = refused(data)
    assert err.key == key
    assert str(err).startswith(f"{key}: ") and fragment in str(err)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("data", "key", "fragment"),
    [
        ({"synthesis": {"threads": 0}}, "synthesis.threads", "between 1 and 8"),
        ({"synthesis": {"threads": 9}}, "synthesis.threads", "between 1 and 8"),
        ({"synthesis": {"max_concurrent": 5}}, "synthesis.max_concurrent", "between 1 and 4"),
        ({"synthesis": {"first_chunk_chars": 300}}, "synthesis.first_chunk_chars", "exceed"),
        ({"queue": {"size": 0}}, "queue.size", "between 1 and 1000"),
        ({"queue": {"size": 1001}}, "queue.size", "between 1 and 1000"),
        ({"queue": {"default_ttl": 0}}, "queue.default_ttl", "at least 0.1"),
        ({"audio": {"volume": -0.1}}, "audio.volume", "between 0 and 2"),
        ({"audio": {"volume": 2.5}}, "audio.volume", "between 0 and 2"),
        ({"audio": {"ring_buffer_seconds": 0.1}}, "audio.ring_buffer_seconds", "0.2 and 30"),
        ({"audio": {"ring_buffer_seconds": 31}}, "audio.ring_buffer_seconds", "0.2 and 30"),
        ({"audio": {"sink": "pulse"}}, "audio.sink", "one of alsa, wav-dir"),
        ({"audio": {"sink": "wav_dir"}}, "audio.sink", 'did you mean "wav-dir"'),
        ({"telemetry": {"interval": 0.5}}, "telemetry.interval", "at least 1"),
        ({"broker": {"port": 70000}}, "broker.port", "between 0 and 65535"),
        ({"broker": {"keepalive": 1}}, "broker.keepalive", "between 5 and 65535"),
        ({"broker": {"protocol": "4"}}, "broker.protocol", "one of auto, 5, 3.1.1"),
        ({"voices": {"default": {"length_scale": 0}}}, "voices.default.length_scale", "0.1"),
        ({"log_level": "verbose"}, "log_level", "DEBUG, INFO, WARNING, ERROR"),
        ({"topic_prefix": "edge-tts/"}, "topic_prefix", "end with '/'"),
        ({"topic_prefix": "/edge-tts"}, "topic_prefix", "start"),
        ({"topic_prefix": "edge-tts/+"}, "topic_prefix", "wildcards"),
        ({"topic_prefix": "edge-tts/#"}, "topic_prefix", "wildcards"),
        ({"hermes": {"site_id": "a/b"}}, "hermes.site_id", "'/'"),
    ],
)
def test_bad_value_names_the_key(data: Mapping[str, object], key: str, fragment: str) -> None:
    err = refused(data)
    assert err.key == key
    assert str(err).startswith(f"{key}: ") and fragment in str(err)


@pytest.mark.unit
@pytest.mark.parametrize("device_id", ["kitchen/pi", "kitchen#1", "pi+", "kitchen pi", ""])
def test_device_id_must_be_one_topic_level(device_id: str) -> None:
    assert refused({"device_id": device_id}).key == "device_id"


@pytest.mark.unit
def test_every_problem_is_reported_at_once() -> None:
    err = refused({"audio": {"volum": 1, "volume": 3}, "synthesis": {"threads": "2"}})
    assert [p.key for p in err.problems] == ["audio.volum", "audio.volume", "synthesis.threads"]
    assert str(err).startswith("3 problems:") and all(str(p) in str(err) for p in err.problems)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("data", "key", "expected"),
    [
        ({"log_level": "debug"}, "log_level", "DEBUG"),
        ({"broker": {"protocol": 5}}, "broker.protocol", "5"),  # YAML reads `5` as a number
        ({"audio": {"device": 2}}, "audio.device", "2"),
        ({"audio": {"volume": 1}}, "audio.volume", 1.0),
        ({"voices": {"default": {"speaker": 0}}}, "voices.default.speaker", "0"),
        ({"voices": {"default": {"sha256": DIGEST.upper()}}}, "voices.default.sha256", DIGEST),
    ],
)
def test_values_are_normalized(data: Mapping[str, object], key: str, expected: object) -> None:
    value = attribute(settings_from_mapping(data), key)
    assert value == expected and type(value) is type(expected)


# --- secrets ---------------------------------------------------------------------------


@pytest.mark.unit
def test_inline_password_is_refused_with_the_alternatives() -> None:
    err = refused({"broker": {"username": "tts", "password": "hunter2"}})
    assert err.key == "broker.password"
    assert "password_file" in str(err) and "$CREDENTIALS_DIRECTORY" in str(err)
    assert "hunter2" not in str(err)


@pytest.mark.unit
def test_password_from_file_is_read_at_call_time(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt-password"
    secret.write_text("s3cret\n", encoding="utf-8")
    broker = settings_from_mapping({"broker": {"username": "tts", "password_file": str(secret)}})
    assert broker.broker.password() == "s3cret"
    secret.write_text("rotated", encoding="utf-8")
    assert broker.broker.password() == "rotated"


@pytest.mark.unit
def test_password_from_systemd_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mqtt-password").write_text("from-systemd\n", encoding="utf-8")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    assert default_settings().broker.password() == "from-systemd"


@pytest.mark.unit
def test_password_file_wins_over_the_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mqtt-password").write_text("from-systemd", encoding="utf-8")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    own = tmp_path / "own"
    own.write_text("from-file", encoding="utf-8")
    broker = BrokerSettings(username="tts", password_file=own)
    assert broker.password() == "from-file"


@pytest.mark.unit
def test_no_password_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_settings().broker.password() is None
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))  # holds no mqtt-password
    assert default_settings().broker.password() is None


@pytest.mark.unit
def test_missing_password_file_is_refused_at_load(tmp_path: Path) -> None:
    err = refused({"broker": {"username": "tts", "password_file": str(tmp_path / "nope")}})
    assert err.key == "broker.password_file" and "does not exist" in str(err)


@pytest.mark.unit
def test_password_file_gone_after_load(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt-password"
    secret.write_text("s3cret", encoding="utf-8")
    broker = settings_from_mapping({"broker": {"username": "tts", "password_file": str(secret)}})
    secret.unlink()
    with pytest.raises(ConfigError, match=r"broker\.password_file: cannot read"):
        broker.broker.password()


@pytest.mark.unit
def test_password_file_needs_a_username(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt-password"
    secret.write_text("s3cret", encoding="utf-8")
    assert refused({"broker": {"password_file": str(secret)}}).key == "broker.password_file"


# --- TLS, paths, voices, sinks ---------------------------------------------------------


@pytest.mark.daemon
@pytest.mark.parametrize(
    ("broker", "port"),
    [({}, 1883), ({"tls": None}, 1883), ({"tls": {}}, 8883), ({"tls": {}, "port": 1884}, 1884)],
)
def test_port_follows_tls_unless_given(broker: Mapping[str, object], port: int) -> None:
    assert settings_from_mapping({"broker": broker}).broker.port == port


@pytest.mark.unit
def test_tls_files_must_exist(tmp_path: Path) -> None:
    err = refused({"broker": {"tls": {"ca_file": str(tmp_path / "ca.pem")}}})
    assert err.key == "broker.tls.ca_file" and "does not exist" in str(err)


@pytest.mark.unit
def test_tls_key_needs_its_certificate(tmp_path: Path) -> None:
    key = tmp_path / "client.key"
    key.write_text("key", encoding="utf-8")
    assert refused({"broker": {"tls": {"key_file": str(key)}}}).key == "broker.tls.key_file"


@pytest.mark.unit
def test_paths_expand_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ca.pem").write_text("ca", encoding="utf-8")
    settings = settings_from_mapping(
        {
            "broker": {"tls": {"ca_file": "~/ca.pem"}},
            "audio": {"sink": "wav-dir", "wav_dir": "~/out"},
            "voices": {"default": {"path": "~/voice.onnx"}},
        }
    )
    assert settings.broker.tls == TlsSettings(ca_file=tmp_path / "ca.pem")
    assert settings.audio.wav_dir == tmp_path / "out"
    assert settings.voices["default"].path == tmp_path / "voice.onnx"


@pytest.mark.unit
@pytest.mark.parametrize("digest", ["abc", "g" * 64, DIGEST[:-1], DIGEST + "0"])
def test_bad_sha256_is_refused(digest: str) -> None:
    err = refused({"voices": {"default": {"sha256": digest}}})
    assert err.key == "voices.default.sha256" and "64 hexadecimal" in str(err)


@pytest.mark.unit
def test_wav_dir_sink_needs_a_directory() -> None:
    err = refused({"audio": {"sink": "wav-dir"}})
    assert err.key == "audio.wav_dir" and "wav-dir" in str(err)


@pytest.mark.unit
def test_several_voices_named_by_their_keys(tmp_path: Path) -> None:
    settings = settings_from_mapping(
        {
            "voices": {"default": None, "kitchen": {"path": str(tmp_path / "k.onnx")}},
            "default_voice": "kitchen",
        }
    )
    assert {name: voice.name for name, voice in settings.voices.items()} == {
        "default": "default",
        "kitchen": "kitchen",
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    "data",
    [
        {"default_voice": "kitchen"},
        {"voices": {"kitchen": {}}},  # no voice is called "default" any more
        {"voices": {}},
    ],
)
def test_default_voice_must_be_one_of_the_voices(data: Mapping[str, object]) -> None:
    err = refused(data)
    assert err.key == "default_voice" and "not one of the voices" in str(err)


@pytest.mark.unit
def test_derived_ids_follow_device_id_unless_given() -> None:
    derived = settings_from_mapping({"device_id": "pi-07"})
    assert (derived.broker.client_id, derived.hermes.site_id) == ("edge-tts-pi-07", "pi-07")
    given = settings_from_mapping(
        {"device_id": "pi-07", "broker": {"client_id": "tts"}, "hermes": {"site_id": "hall"}}
    )
    assert (given.broker.client_id, given.hermes.site_id) == ("tts", "hall")


# --- files and overrides ---------------------------------------------------------------


@pytest.mark.unit
def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "audio:\n  volume: 1\n   sink: alsa\n")
    with pytest.raises(ConfigError, match="YAML syntax error at line 3"):
        load_settings(path)


@pytest.mark.unit
def test_a_key_given_twice_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "audio:\n  volume: 1\n  volume: 2\n")
    with pytest.raises(ConfigError, match=r"line 3.*'volume' is given twice"):
        load_settings(path)


@pytest.mark.unit
@pytest.mark.parametrize("text", ["- broker\n", "just text\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_settings(write(tmp_path, text))


@pytest.mark.unit
def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the settings file"):
        load_settings(tmp_path / "missing.yaml")


@pytest.mark.unit
def test_overrides_are_applied_and_checked() -> None:
    settings = load_settings(DEFAULT_FILE, {"audio.volume": 0.5, "log_level": "debug"})
    assert (settings.audio.volume, settings.log_level) == (0.5, "DEBUG")
    with pytest.raises(ConfigError, match=r"^audio\.volume: must be between 0 and 2"):
        load_settings(DEFAULT_FILE, {"audio.volume": 5})
    with pytest.raises(ConfigError, match=r'^audio\.volum: .*"audio\.volume"'):
        load_settings(DEFAULT_FILE, {"audio.volum": 0.5})


@pytest.mark.unit
def test_override_adds_a_voice() -> None:
    settings = load_settings(DEFAULT_FILE, {"voices.slow.length_scale": 1.5})
    assert settings.voices["slow"].length_scale == 1.5


# --- the settings objects --------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize("key", ["log_level", "audio.volume", "broker.tls", "voices"])
def test_settings_are_frozen(key: str) -> None:
    *parents, name = key.split(".")
    owner = attribute(default_settings(), ".".join(parents)) if parents else default_settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(owner, name, None)


@pytest.mark.unit
def test_voices_mapping_is_read_only() -> None:
    voices = default_settings().voices
    with pytest.raises(TypeError):
        voices["other"] = config.VoiceSettings(name="other")  # type: ignore[index]


@pytest.mark.unit
def test_settings_made_in_code_are_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"^volume: must be between 0 and 2"):
        AudioSettings(volume=3.0)
    with pytest.raises(ConfigError, match=r"^device_id: "):
        Settings(device_id="a/b")
    assert BrokerSettings().port == 1883
    assert BrokerSettings(tls=TlsSettings()).port == 8883


@pytest.mark.unit
def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("state_dir", "env", "expected"),
    [
        ("/srv/tts", {"STATE_DIRECTORY": "/var/lib/edge-tts"}, "/srv/tts"),
        (None, {"STATE_DIRECTORY": "/var/lib/edge-tts:/var/lib/other"}, "/var/lib/edge-tts"),
        (None, {"XDG_STATE_HOME": "/home/pi/.state"}, "/home/pi/.state/edge-tts"),
        (None, {"HOME": "/home/pi"}, "/home/pi/.local/state/edge-tts"),
    ],
)
def test_resolved_state_dir(
    monkeypatch: pytest.MonkeyPatch, state_dir: str | None, env: dict[str, str], expected: str
) -> None:
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    settings = settings_from_mapping({"state_dir": state_dir})
    assert settings.resolved_state_dir() == Path(expected)
