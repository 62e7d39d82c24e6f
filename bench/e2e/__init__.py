"""bench/daemon_e2e.py's parts: the rig (broker, sound cards, daemons), the daemon
configurations (knobs), the phases, the TTFA investigation, the figures (targets and
tables), and the shim that sets the two knobs no setting reaches."""
