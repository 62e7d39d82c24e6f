"""Choosing, per machine, which build of each voice to run (`edge-ttsd tune`).

measure.py    the quality gate and the side-by-side timing, through the daemon's engine
quantized.py  the builds it can try
run.py        one tuning run: measure, choose, record

What the daemon reads of it lives below, in voice/: machine.py (what a choice depends on
besides the models: CPU and onnxruntime) and tune_record.py (the recorded choice;
voice/builds.py: whether the daemon takes it).
"""

DEFAULT_BUDGET_S = 60.0  # `edge-ttsd tune --budget`: here so the CLI needs nothing heavier
