"""Requests and events as data: no I/O here.

topics.py   topic names, and which topics a reply may be published to
request.py  what a request is: `SayRequest`, its door's `Origin`, priorities, its dedupe key
parse.py    payloads (plain text, JSON) into a `SayRequest`, or `BadRequest` and why
events.py   events and Hermes replies rendered as payloads

What is MQTT's own (the `Envelope` of a message, its response topic, Hermes' site) is the
MQTT door's: `edge_tts/mqtt/envelope.py`; its reporter (`edge_tts/mqtt/reporter.py`)
publishes these payloads.
"""
