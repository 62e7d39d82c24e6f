"""Real-world SSML and plain text as the vendors document it and as people and language
models send it, each with what it must say (the chunks' text, joined by " | ").

Written for these tests after the vendors' documentation pages (Amazon Polly's and
Alexa's SSML tag references, Azure Speech's "SSML document structure" and voice/prosody
pages, Google Cloud Text-to-Speech's SSML reference, Home Assistant's tts.speak examples),
not copied from them: the same elements, attributes and habits (an Azure voice name in
every document, `mstts:` and `amazon:` namespaces, `<audio>` with fallback text, Google's
`<par>`), in short announcements of our own.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Case(NamedTuple):
    name: str
    source: str  # whose documentation the markup follows
    text: str
    said: str  # the chunks' text, joined by " | "


AZURE: Final = "Azure Speech"
POLLY: Final = "Amazon Polly"
ALEXA: Final = "Alexa Skills Kit"
GOOGLE: Final = "Google Cloud Text-to-Speech"
HA: Final = "Home Assistant"
LLM: Final = "a language model's output"

CASES: Final = (
    Case(
        "azure-voice-express-as",
        AZURE,
        '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" '
        'xmlns:mstts="https://www.w3.org/2001/mstts" xml:lang="en-US">'
        '<voice name="en-US-JennyNeural"><mstts:express-as style="cheerful" styledegree="2">'
        "The washing machine has finished.</mstts:express-as></voice></speak>",
        "The washing machine has finished.",
    ),
    Case(
        "azure-prosody-pitch-rate",
        AZURE,
        '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-US">'
        '<voice name="en-US-GuyNeural"><prosody pitch="0%" rate="-10.00%">'
        "Rain is expected after 3 pm.</prosody></voice></speak>",
        "Rain is expected after three PM.",
    ),
    Case(
        "azure-silence-and-break",
        AZURE,
        '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" '
        'xmlns:mstts="http://www.w3.org/2001/mstts" xml:lang="en-US">'
        '<voice name="en-US-AriaNeural"><mstts:silence type="Sentenceboundary" value="200ms"/>'
        'Front door unlocked.<break time="500ms"/>Back door locked.</voice></speak>',
        "Front door unlocked. | Back door locked.",
    ),
    Case(
        "azure-zh-voice",
        AZURE,
        '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="zh-CN">'
        '<voice name="zh-CN-XiaoxiaoNeural">前方路口请左转。</voice></speak>',
        "前方路口请左转.",
    ),
    Case(
        "polly-amazon-effects",
        POLLY,
        '<speak>Your package <amazon:effect name="whispered">has arrived</amazon:effect>.'
        '<amazon:breath duration="medium" volume="x-loud"/> '
        '<amazon:domain name="news">Traffic is light.</amazon:domain></speak>',
        "Your package has arrived. | Traffic is light.",
    ),
    Case(
        "polly-emphasis-and-xsampa",
        POLLY,
        '<speak>I <emphasis level="strong">really</emphasis> mean it. You say '
        '<phoneme alphabet="x-sampa" ph="p@&quot;kA:n">pecan</phoneme>.</speak>',
        "I | really | mean it. | You say [ipa: pəˈkɑːn].",
    ),
    Case(
        "polly-say-as-kinds",
        POLLY,
        '<speak>Add <say-as interpret-as="fraction">3/4</say-as> cup. '
        '<say-as interpret-as="expletive">darn</say-as> it. '
        'The file is <say-as interpret-as="unit">2.5MB</say-as>.</speak>',
        "Add three quarters cup. beep it. | The file is two point five megabytes.",
    ),
    Case(
        "polly-audio-fallback",
        POLLY,
        '<speak><audio src="https://example.com/chime.mp3">Ding.</audio> '
        "The laundry is done.</speak>",
        "Ding. | The laundry is done.",
    ),
    Case(
        "alexa-interjection-and-voice",
        ALEXA,
        '<speak><voice name="Matthew"><say-as interpret-as="interjection">wow</say-as>, '
        "the garage door is open.</voice></speak>",
        "wow, the garage door is open.",
    ),
    Case(
        "google-par-media",
        GOOGLE,
        '<speak><par><media xml:id="intro" begin="0.5s"><speak>Good morning.</speak></media>'
        '<media begin="intro.end+1.0s" soundLevel="-6dB"><audio src="https://example.com/x.mp3"/>'
        "</media></par></speak>",
        "Good morning.",
    ),
    Case(
        "google-date-time-duration",
        GOOGLE,
        '<speak>Due <say-as interpret-as="date" format="yyyymmdd" detail="1">2026-12-24</say-as>'
        ' at <say-as interpret-as="time" format="hms12">18:30</say-as>, for '
        '<say-as interpret-as="duration" format="h:m">1:30</say-as>.</speak>',
        "Due December twenty-fourth, | twenty twenty-six at six thirty PM, for one hour and thirty "
        "minutes.",
    ),
    Case(
        "google-prefixed-root-and-bom",
        GOOGLE,
        '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ssml:speak xmlns:ssml="http://www.w3.org/2001/10/synthesis">'
        "<ssml:p>Hello from the kitchen</ssml:p></ssml:speak>",
        "Hello from the kitchen.",
    ),
    Case(
        "google-lang-fr-in-english",
        GOOGLE,
        '<speak>The café is called <lang xml:lang="fr-FR">Chez Paul</lang>.</speak>',
        "The café is called Chez Paul.",  # no French voice: read as the English text
    ),
    Case(
        "llm-entities-and-ampersand",
        LLM,
        "<speak>Temperature&nbsp;&mdash; 5&deg;C & falling, I <3 this.</speak>",
        "Temperature, | five degrees Celsius and falling, I heart this.",
    ),
    Case(
        "llm-markdown-plain",
        LLM,
        "## Morning summary\n- **Weather:** 18 degrees, sunny\n- *Calendar:* dentist at 3 pm",
        "Morning summary. | Weather: eighteen degrees, sunny. | Calendar: dentist at three PM.",
    ),
    Case(
        "ha-plain-comparison",
        HA,
        "Humidity in the bathroom is > 70%, open the window",
        "Humidity in the bathroom is | greater than seventy percent, open the window",
    ),
)
