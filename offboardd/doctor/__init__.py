"""`offboardd doctor`: check a deployment and say what to fix, one line per check.

- cli.py: the subcommand (config file, device, clock, then FC and broker concurrently)
- report.py: Check / Status values and the output line
- device.py, holders.py: the serial device (presence, access, policy, other holders)
- fc_probe.py, fc_verdicts.py: ask the FC (the daemon's link/codec/translate) and judge it
- broker.py: connect to the MQTT broker with the configured credentials
- clock.py: the host clock synchronised, as the service sees it (the recorder's age pruning)

Reads and asks; never changes the system, the FC's parameters or the broker.
"""
