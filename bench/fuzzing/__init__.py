"""bench/fuzz.py's parts: the payloads (case, text_cases, junk, mix), the MQTT 5 client, the
lanes that send them, the answers matched to them, and the findings."""
