"""Files the daemon keeps between runs.

atomic.py  written whole (a crash leaves the old or the new one), built once under a lock
read.py    read bounded and checked; an unusable one is set aside, not fatal
"""
