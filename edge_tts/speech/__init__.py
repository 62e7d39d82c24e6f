"""The speech engine: requests become jobs, text becomes audio, audio is played in order.

jobs.py       a request on its way: the Job, its chunks, the tasks it makes
schedule.py   which request plays next and which synthesis runs next
pipeline.py   requests → synthesis workers → one speaker
playback.py   the playback thread: one job at a time, highest priority first
routing.py    which voice speaks which part of a text, by writing system
synthesis.py  text → audio: front-end chunks, phoneme ids, the voice's pieces
dedupe.py     which requests were already played, across restarts
oneshot.py    `edge-ttsd say`: one request through the same pipeline and outputs
readout.py    `edge-ttsd explain`: how a text is read, chunk by chunk, without synthesis
"""
