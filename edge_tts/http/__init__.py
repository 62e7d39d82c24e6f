"""An HTTP server, so scripts, Node-RED and OpenAI- or Piper-compatible clients can use
this device without MQTT: speech streamed back to the client, /say played here, health
and Prometheus metrics. One more front door to the same engine (speech/).

door.py        the part: listening, start and stop
admission.py   which connections are served: limits in all and per client, the 503
routes.py      the application: routes, the token, CORS, errors into JSON
shared.py      what every route shares
speech_api.py  OpenAI's /v1/audio/speech and Piper's /synthesize, streamed
audio_out.py   one engine response as an HTTP body: chunked as made, or whole
invoke_api.py  /invoke and /download, through the bounded pool (pool.py)
say_api.py     /say and /requests/{id}, through the request tracker (tracker.py)
info_api.py    /voices and /health
metrics.py     /metrics: the telemetry in Prometheus' format
fields.py      a JSON body within bounds, and its fields' checks
errors.py      errors in OpenAI's JSON shape

Only its figures (what telemetry counts for it) are here: aiohttp and prometheus_client
(12 MB of RSS) load only in a daemon whose `http.uri` is set (daemon/app.py imports
door.py then).
"""

from ..core.telemetry import Door, Figures

# "http": audio sent to an HTTP client; "http_say": a request of its /say, played here.
FIGURES = Figures(
    counters=(
        "http_requests",  # requests the HTTP server answered
        "http_errors",  # HTTP requests answered with an error (4xx, 5xx), or dropped
        "http_busy",  # HTTP requests or connections turned away with 503: a bound was reached
    ),
    doors=(Door("http"), Door("http_say", local=True)),
)
