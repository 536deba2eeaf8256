"""`offboardd demo`: the first thing a new user runs (`make demo`).

`processes.py` starts and always stops the private deployment (mosquitto, `offboardd sim`,
`offboardd run`), `plot.py` draws the PNG, `cli.py` wires them to the scenario runner
(offboardd.scenario) and its terminal display.
"""
