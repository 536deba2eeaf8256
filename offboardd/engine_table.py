"""`offboardd engine-table [--mermaid]`: print the offboard engine's phase table.

The table (core/machine_table.py) as Markdown, or as the Mermaid diagram docs/engine.md
embeds. Prints only; the rendering is core/machine_diagram.py (pure).
"""

from __future__ import annotations

import argparse
import sys

from offboardd.core.machine_diagram import render_markdown, render_mermaid
from offboardd.core.machine_table import MACHINE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mermaid", action="store_true", help="print the Mermaid state diagram instead"
    )


def main(args: argparse.Namespace) -> int:
    render = render_mermaid if args.mermaid else render_markdown
    sys.stdout.write(render(MACHINE))
    return 0
