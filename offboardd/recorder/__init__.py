"""The flight recorder (issue 17): every flight's tlog and journal, on the companion.

recorder.py is the loop side (cheap, never waits), writer.py the thread that writes,
folders.py the flights directory and its budget, store.py reads flights back for
`offboardd log` (cli.py, plot.py) and the MQTT `flights` command.
"""
