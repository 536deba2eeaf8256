"""offboardd: an offboard-control daemon for PX4 flight controllers.

The package is laid out as the architecture: `core/` is pure (no I/O, no clock),
`mavlink/` turns bytes into messages and back, `mqtt/` is the commander's interface,
`sim/` is a PX4-like vehicle for tests and demos, and `runtime.py` wires them.
"""

__version__ = "0.1.0"
