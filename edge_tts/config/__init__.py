"""Settings: one YAML file, validated once at start into frozen dataclasses passed down.

The dataclasses in `sections` are the schema: each field's type says what YAML value it
takes, its default is that setting's only default, and its metadata adds ranges and
choices, so the allowed keys, their defaults and their checks are written once. A
settings object is checked in `__post_init__` (`checks`), so a bad one cannot exist
however it was made; `loader` adds unknown-key detection with a "did you mean" hint and
dotted key paths in every message.
"""

from .checks import ConfigError
from .credentials import HTTP_TOKEN_CREDENTIAL, PASSWORD_CREDENTIAL
from .loader import config_keys, default_settings, load_settings, settings_from_mapping
from .sections import (
    AUTO_BUILD,
    LOG_LEVELS,
    MQTT_PORT,
    MQTTS_PORT,
    PROTOCOLS,
    SINKS,
    AudioSettings,
    BrokerSettings,
    CacheSettings,
    HermesSettings,
    HomeAssistantSettings,
    QueueSettings,
    Settings,
    SynthesisSettings,
    TelemetrySettings,
    TextSettings,
    TlsSettings,
    VoiceSettings,
)
from .servers import HttpSettings, WyomingSettings

__all__ = [
    "AUTO_BUILD",
    "HTTP_TOKEN_CREDENTIAL",
    "LOG_LEVELS",
    "MQTTS_PORT",
    "MQTT_PORT",
    "PASSWORD_CREDENTIAL",
    "PROTOCOLS",
    "SINKS",
    "AudioSettings",
    "BrokerSettings",
    "CacheSettings",
    "ConfigError",
    "HermesSettings",
    "HomeAssistantSettings",
    "HttpSettings",
    "QueueSettings",
    "Settings",
    "SynthesisSettings",
    "TelemetrySettings",
    "TextSettings",
    "TlsSettings",
    "VoiceSettings",
    "WyomingSettings",
    "config_keys",
    "default_settings",
    "load_settings",
    "settings_from_mapping",
]
