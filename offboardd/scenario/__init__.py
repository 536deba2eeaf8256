"""Scenario runner: a mission as data, flown through the daemon over MQTT.

    from offboardd.client import OffboardClient
    from offboardd.scenario import MISSIONS, ScenarioRunner

    async with OffboardClient("127.0.0.1", 1883, "vehicle1") as client:
        summary = await ScenarioRunner(client, MISSIONS["square"], on_progress=print).run()
    print("\\n".join(summary.lines()))

`mission.py` (legs, the built-in missions), `geometry.py`, `report.py` (Progress,
LegResult, Summary, ScenarioError), `feed.py` (telemetry/position), `runner.py`
(ScenarioRunner), `display.py` (terminal progress), `cli.py` (`offboardd scenario`).
"""

from offboardd.scenario.mission import MISSIONS, Mission, square_mission
from offboardd.scenario.report import LegResult, PathSample, Progress, ScenarioError, Summary
from offboardd.scenario.runner import RunnerSettings, ScenarioRunner

__all__ = ["MISSIONS", "LegResult", "Mission", "PathSample", "Progress", "RunnerSettings",
           "ScenarioError", "ScenarioRunner", "Summary", "square_mission"]
