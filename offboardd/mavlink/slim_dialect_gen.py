"""Generates `slim_dialect.py`: pymavlink's own generator (mavgen) run on a subset of the
MAVLink definitions pymavlink ships, only the messages the daemon itself encodes, decodes
or names in its stream plan, and the enums their fields use, without descriptions.

Why: pymavlink's `development` dialect (310 messages, 1,715 enum entries) is 5.7 MB of the
daemon's RSS, more than anything else it imports; this one is a fraction of that
(bench/stream-plan.md). The frames are the same: a message's CRC_EXTRA and layout come
from its name and fields alone, which are copied whole (extensions included);
tests/mavlink/test_slim_dialect.py checks each message against the full dialect and that
this generator reproduces the committed file. A relayed message outside the subset makes
the daemon's codec use the full dialect (fc_codec.py).

Run `make dialect` (`python -m offboardd.mavlink.slim_dialect_gen`) after a pymavlink
upgrade or a change of `MESSAGES`; commit the result.
"""

from __future__ import annotations

import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pymavlink
from pymavlink.generator import mavgen

# What the daemon encodes, decodes (translate_in, telemetry) or names in its default config,
# and the messages PX4 streams on an onboard link that a relay may carry; names must exist
# in pymavlink's development.xml. (The stream plan's rows need no class: core/stream_plan.py
# holds PX4's onboard streams by id.)
MESSAGES: tuple[str, ...] = (
    # encoded
    "HEARTBEAT", "SET_POSITION_TARGET_LOCAL_NED", "SET_POSITION_TARGET_GLOBAL_INT",
    "SET_ATTITUDE_TARGET", "COMMAND_LONG", "PARAM_REQUEST_READ",
    # decoded
    "COMMAND_ACK", "PARAM_VALUE", "AUTOPILOT_VERSION", "CURRENT_MODE", "STATUSTEXT",
    "LOCAL_POSITION_NED", "GLOBAL_POSITION_INT", "ATTITUDE", "HOME_POSITION",
    "EXTENDED_SYS_STATE", "ESTIMATOR_STATUS", "SYS_STATUS", "BATTERY_STATUS", "GPS_RAW_INT",
    # PX4's onboard streams (relayed without loading the full dialect: test_slim_dialect.py)
    "ALTITUDE", "ATTITUDE_QUATERNION", "ATTITUDE_TARGET", "DISTANCE_SENSOR", "HIGHRES_IMU",
    "ODOMETRY", "OPEN_DRONE_ID_LOCATION", "OPEN_DRONE_ID_SYSTEM", "PING",
    "POSITION_TARGET_LOCAL_NED", "SCALED_PRESSURE", "SERVO_OUTPUT_RAW", "SYSTEM_TIME",
    "TIMESYNC", "VFR_HUD", "VIBRATION",
    # named by the default config (mavlink.accept_unsigned_messages: a SiK radio's own)
    "RADIO_STATUS",
)  # fmt: skip
# Enums the daemon reads constants of, beyond those the messages' fields name.
ENUMS: tuple[str, ...] = ("MAV_CMD", "MAV_PARAM_TYPE", "MAV_MODE_FLAG", "MAV_RESULT")
# Of MAV_CMD (~250 commands: most of a dialect's enum tables), the ones the daemon sends.
MAV_CMD_ENTRIES: frozenset[str] = frozenset({
    "MAV_CMD_COMPONENT_ARM_DISARM", "MAV_CMD_DO_SET_MODE", "MAV_CMD_REQUEST_MESSAGE",
    "MAV_CMD_SET_MESSAGE_INTERVAL"})  # fmt: skip
SOURCE = "development.xml"  # includes common.xml, standard.xml, minimal.xml
OUTPUT = Path(__file__).with_name("slim_dialect.py")
_UNUSED = frozenset({"description", "deprecated", "wip", "param"})


def _definitions(xml_dir: Path, name: str, seen: set[str]) -> list[ET.Element]:
    """The root elements of `name` and of everything it includes, includes first."""
    if name in seen:
        return []
    seen.add(name)
    root = ET.parse(xml_dir / name).getroot()
    roots: list[ET.Element] = []
    for include in root.findall("include"):
        roots += _definitions(xml_dir, (include.text or "").strip(), seen)
    return [*roots, root]


def _strip(element: ET.Element) -> ET.Element:
    """A copy without descriptions nor command parameters' documentation (the generated
    docstrings and tables are most of a dialect; none of it is on the wire)."""
    copy = ET.Element(element.tag, dict(element.attrib))
    copy.text = None if element.tag in ("field", "entry") else element.text
    for child in element:
        if child.tag not in _UNUSED:
            copy.append(_strip(child))
    return copy


def subset_xml(xml_dir: Path) -> str:
    roots = _definitions(xml_dir, SOURCE, set())
    messages = {m.get("name"): m for r in roots for m in r.iter("message")}
    enums: dict[str | None, ET.Element] = {}
    for enum in (e for r in roots for e in r.iter("enum")):
        name = enum.get("name")
        if name in enums:  # a later file adds entries to an enum (development's MAV_CMD)
            enums[name].extend(enum.findall("entry"))
        else:
            enums[name] = ET.Element("enum", dict(enum.attrib))
            enums[name].extend(enum)
    missing = [name for name in MESSAGES if name not in messages]
    if missing:
        raise SystemExit(f"not in pymavlink's {SOURCE}: {', '.join(missing)}")
    wanted_enums = set(ENUMS)
    for name in MESSAGES:
        wanted_enums |= {e for f in messages[name].iter("field") if (e := f.get("enum"))}
    out = ET.Element("mavlink")
    ET.SubElement(out, "version").text = "3"
    ET.SubElement(out, "dialect").text = "0"
    enums_el = ET.SubElement(out, "enums")
    for name in sorted(n for n in wanted_enums if n in enums):
        enum = _strip(enums[name])
        if name == "MAV_CMD":
            for entry in enum.findall("entry"):
                if entry.get("name") not in MAV_CMD_ENTRIES:
                    enum.remove(entry)
        enums_el.append(enum)
    messages_el = ET.SubElement(out, "messages")
    for name in sorted(MESSAGES, key=lambda n: int(messages[n].get("id", "0"))):
        messages_el.append(_strip(messages[name]))
    ET.indent(out)
    return ET.tostring(out, encoding="unicode") + "\n"


def generate(output: Path = OUTPUT) -> None:
    xml_dir = Path(pymavlink.__file__).parent / "dialects" / "v20"
    with tempfile.TemporaryDirectory() as tmp:
        xml_path = Path(tmp) / "offboardd_slim.xml"
        xml_path.write_text(subset_xml(xml_dir), encoding="utf-8")
        opts = mavgen.Opts(str(Path(tmp) / "slim_dialect"), wire_protocol="2.0",
                           language="Python3", validate=False)
        if not mavgen.mavgen(opts, [str(xml_path)]):
            raise SystemExit("mavgen failed")
        code = (Path(tmp) / "slim_dialect.py").read_text(encoding="utf-8")
    header = ('"""GENERATED by offboardd/mavlink/slim_dialect_gen.py from pymavlink '
              f'{_pymavlink_version()}; do not edit."""\n')
    output.write_text(header + code, encoding="utf-8")


def _pymavlink_version() -> str:
    from importlib.metadata import version  # noqa: PLC0415 (only when generating)

    return version("pymavlink")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)
    print(f"wrote {OUTPUT if len(sys.argv) < 2 else sys.argv[1]}")
