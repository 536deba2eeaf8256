"""offboardd's benchmark: the daemon, MAVSDK and a pymavlink loop, side by side, one run.

Run `make bench` (or `python -m bench`); see bench/README.md for what each number means.
"""
