"""The voices the daemon loads: files, integrity, phonemes, inference, the two-stage
Mandarin voice, which build to load, and the voices by name (registry.py). Making builds
(quantizer, importer) is edge_tts.voicebuild."""
