"""`verify models`: what a stack's model bucket holds, read through the GCS JSON API.

- bucket.py: the two GCS calls (objects.list, paged; objects.get of a completion marker) and the marker's shape;
- inventory.py: the listing and markers turned into checkpoints (complete, changed, partial) and served paths;
- cli.py: flags, the table, ``--json`` and the exit code.
"""

from __future__ import annotations
