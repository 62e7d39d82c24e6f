"""Audio after synthesis: signal processing, the ring buffer and the outputs (ALSA, WAV dir)."""
