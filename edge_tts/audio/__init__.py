"""Audio after synthesis, in playing order.

dsp.py         lead-in trim, resampling, the int16 soft limiter, volume and fades
pause_gate.py  turns the quantized voice's noise floor in pauses down
output.py      what the pipeline plays into: the AudioOutput contract (no sink in it)
sinks.py       open_output(): the sink the settings name
alsa.py        the ALSA sink: utterances into the ring, drained by the stream's callback
ringbuffer.py  the preallocated ring between the writers and that callback
device.py      the PortAudio stream: kept open, supervised, reopened with back-off
wav.py         what the WAV sinks share: the one-file writer, the output around it
wavdir.py      the wav-dir sink: one WAV file per request
wavfile.py     `edge-ttsd say --out`: one utterance into one named WAV file
"""
