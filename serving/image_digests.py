"""The digest each pinned image tag resolves to (serving/data/image-digests.json), and the reference to pull.

Why: a release tag can be pushed again; a digest cannot. Where the table records a tag's digest, the program
pulls `tag@digest` (the tag stays for people, the digest is the pin) and the plan says which digest it serves
and whether that digest was confirmed; where none could be read, the plan says the image is pinned by its tag
only, so nobody mistakes a tag for a digest. Nothing here is invented: an unknown digest is null.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class ImageDigest:
    """One tag's digest (None when unknown), where it was read and whether it was confirmed at the source."""

    reference: str
    digest: str | None
    source: str
    read: str
    confirmed: bool

    @property
    def pinned(self) -> str:
        """What to pull: `tag@digest` when the digest is known, else the tag."""
        return f"{self.reference}@{self.digest}" if self.digest else self.reference


@functools.cache
def image_digests() -> dict[str, ImageDigest]:
    """The table, checked once: every digest well formed, every entry a tag (not already a digest)."""
    text = resources.files("serving.data").joinpath("image-digests.json").read_text(encoding="utf-8")
    table: dict[str, ImageDigest] = {}
    for reference, entry in json.loads(text)["images"].items():
        digest = entry["digest"]
        if "@" in reference or (digest is not None and not _DIGEST.match(digest)):
            raise ValueError(f"serving/data/image-digests.json: {reference!r}: a tag with a sha256 digest or null")
        table[reference] = ImageDigest(reference, digest, entry["source"], entry["read"], bool(entry["confirmed"]))
    return table


def digest_of(reference: str) -> ImageDigest | None:
    """The table's entry for a tag (None for a reference it does not list or one already pinned by digest)."""
    return image_digests().get(reference)


def pinned_reference(reference: str) -> str:
    """`reference` pinned by its recorded digest where the table has one; otherwise unchanged."""
    entry = digest_of(reference)
    return entry.pinned if entry is not None else reference
