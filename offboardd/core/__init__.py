"""The pure offboard core: no asyncio, no sockets, no logging, no clock reads.

How the shell drives it (aioquic style)::

    engine = OffboardEngine(EngineSettings(...), now)
    actions = engine.handle(event, now)   # an FC event (core.events) or a command
    actions = engine.poll(now)            # the one timer, due at engine.next_deadline()
    actions = engine.step(events, now)    # or: a polled link's messages, then the timer
    state = engine.snapshot(now).as_dict()

Modules: setpoints (validated value types + SetpointKind / EstimateNeed), commands
(operator commands, each with a command_id), events (FC events, decoded by
mavlink/translate_in), actions (what to do: FC-bound actions carry their Target; Reply
answers one command; Notice is an operator-visible event with fixed keys), modes (PX4
custom_mode), settings (EngineSettings), reasons (Phase, Reason -> ErrorCode), vehicle
(VehicleState), stream / lease / retry / fc_link (the engine's parts), machine /
machine_table (the phase table), offboard (the engine: offboard.py + engine_*), snapshot.
"""
