"""edge-tts-daemon: offline text-to-speech for Raspberry Pi fleets."""

__version__ = "0.1.0"
