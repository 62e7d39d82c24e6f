"""bench/fuzz.py's parts: the payloads (case, texts, junk, mix), the MQTT 5 client, the
run that sends them and matches every answer, and the report."""
