"""`python -m offboardd` is the `offboardd` console script."""

from offboardd.cli import main

raise SystemExit(main())
