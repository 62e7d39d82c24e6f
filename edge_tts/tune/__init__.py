"""Choosing, per machine, which build of each voice to run (`edge-ttsd tune`).

builds.py   the builds of a configured voice that can stand in for one another
machine.py  what a choice depends on besides the models: CPU and onnxruntime
measure.py  the quality gate and the side-by-side timing, through the daemon's engine
run.py      one tuning run: measure, choose, record
record.py   the recorded choice, and which build the daemon loads because of it
"""

DEFAULT_BUDGET_S = 60.0  # `edge-ttsd tune --budget`: here so the CLI needs nothing heavier
