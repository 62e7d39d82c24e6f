"""Requests and events as data: no I/O here.

topics.py   topic names, and which topics a reply may be published to
request.py  what a request is: `SayRequest`, its MQTT `Envelope`, priorities, its dedupe key
parse.py    payloads (plain text, JSON, Hermes) into a `SayRequest`, or `BadRequest` and why
events.py   events and Hermes replies rendered as payloads

The reporter that publishes these over MQTT is `edge_tts/mqtt/reporter.py`, beside this package
(it does the I/O, on the link, which itself builds `Envelope`s from this package).
"""
