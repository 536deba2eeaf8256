"""`python -m bench`: the benchmark's command line (bench/run.py)."""

import sys

from bench.run import main

sys.exit(main())
