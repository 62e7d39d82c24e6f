"""Home Assistant: the device, its telemetry and its controls by MQTT discovery.

discovery.py  the discovery config (pure: payloads only)
controls.py   the stop and volume topics, and publishing discovery (on paho's thread)
volume.py     the volume set over MQTT, kept across restarts
remove.py     `edge-ttsd homeassistant remove`: a decommissioned device leaves HA
"""
