"""Text front-end: clean and normalize message text, then split it into short chunks.

    chunks = prepare("Motion detected at 11:42 PM. Check the camera.",
                     max_chunk_chars=200, first_chunk_chars=40)
    # ["Motion detected at eleven forty-two PM.", "Check the camera."]

The first chunk is kept short so its audio can start playing while the rest is synthesized.
"""

from edge_tts.text.frontend import EmptyTextError, normalize, prepare
from edge_tts.text.scripts import UnsupportedScriptError
from edge_tts.text.split import split_long, split_sentences

__all__ = [
    "EmptyTextError",
    "UnsupportedScriptError",
    "normalize",
    "prepare",
    "split_long",
    "split_sentences",
]
