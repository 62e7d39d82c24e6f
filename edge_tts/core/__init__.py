"""The ground floor: the plumbing every layer above shares and that imports no other
package of ours: telemetry's registry (telemetry.py) and this process's health (host.py),
the parts' start and stop (lifecycle.py), and a server's event loop in a thread
(loop_server.py)."""
