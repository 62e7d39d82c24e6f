"""The MQTT front door: the connection, what comes in and what goes out.

client.py         paho clients as we build them: login, TLS, protocol
link.py           the daemon's connection over time: connect, announce, subscribe, ack
subscriptions.py  what the link subscribes to, and what the broker's answer means
intake.py         MQTT message → job → pipeline
reporter.py       what became of a request, published as events
online_gate.py    `edge-ttsd wait-online`: wait for this device's retained `online`
"""

from ..core.telemetry import Door, Figures

FIGURES = Figures(counters=("reconnects", "retained_skipped"), doors=(Door("mqtt", local=True),))
