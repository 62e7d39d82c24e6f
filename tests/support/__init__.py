"""Test and benchmark rig: broker, daemon launcher, virtual sound card, fakes, sandbox runner."""
