"""`python -m verify ...`: hand over to the CLI and exit with its code."""

from __future__ import annotations

from verify.cli import main

raise SystemExit(main())
