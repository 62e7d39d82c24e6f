"""Choosing, per machine, which build of each voice to run (`edge-ttsd tune`).

machine.py  what a choice depends on besides the models: CPU and onnxruntime
measure.py  the quality gate and the side-by-side timing, through the daemon's engine
run.py      one tuning run: measure, choose, record
record.py   the recorded choice (voice/builds.py: the builds, and whether the daemon takes it)
"""

DEFAULT_BUDGET_S = 60.0  # `edge-ttsd tune --budget`: here so the CLI needs nothing heavier
