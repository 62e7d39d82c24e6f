"""Piper voices: files, integrity, phonemes, inference, quantization."""
