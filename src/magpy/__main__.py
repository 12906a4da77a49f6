"""``python -m magpy``: see magpy.cli."""
from magpy.cli import main

raise SystemExit(main())
