"""The daemon as a process: its wiring, health, systemd and telemetry.

app.py        build every part, start them in order, run until SIGTERM, stop in reverse
lifecycle.py  parts started in dependency order and stopped in reverse
status.py     how the daemon is doing, read from its parts
notify.py     sd_notify: READY / STATUS / WATCHDOG / STOPPING and the health tick
periodic.py   the tick: one thread for every periodic duty (health, watchdog, telemetry)
loop_server.py a door's server: an asyncio loop in its thread, listening, retried, stopped
telemetry.py  counters, latency windows and process health, as one retained document
logs.py       journald entries under systemd, plain stderr lines elsewhere
"""
