"""The candidate overlay's record as typed documents: sweep.json's ``overlay`` and promotion.json's
``candidate_overlay``, each field declared once.

``OverlayRecord`` is what the sweep records at its start (``sweep_record.overlay_record``): the
overlay's identity (``CandidateOverlay``: digest, roles, files) plus each destination's sha256 in
the toolkit then and who wrote the overlay. promotion.json keeps the identity whole
(``candidate_overlay``) and the rest as ``target_base_digests`` and ``candidate_origin``. Frozen, no
extra keys, no coercion (``stats_model.Document``): a forged record fails to parse, it is not
repaired.
"""

from __future__ import annotations

from pydantic import Field

from .stats_model import Document

CANDIDATE_ORIGIN = "manual-initial-overlay"
"""Who wrote the overlay when the record names none (``--candidate-origin``'s default; sweeps
recorded before origins were)."""


class OverlayFile(Document):
    """One file of the overlay, as benchmarked."""

    path: str = Field(description="the toolkit-relative destination (under skills/)")
    sha256: str = Field(description="sha256 of the file's bytes")
    bytes: int = Field(description="the file's size in bytes")


class CandidateOverlay(Document):
    """The overlay's identity: what promotion.json's ``candidate_overlay`` holds."""

    digest: str = Field(description="canonical digest of [path, sha256, bytes] per file, in order")
    roles: list[str] = Field(description="the workflow roles the overlay replaces, sorted")
    files: list[OverlayFile] = Field(description="each file of the overlay, in order")


class OverlayRecord(CandidateOverlay):
    """sweep.json's ``overlay``: the identity plus the toolkit's state at sweep start and the origin."""

    target_base_digests: dict[str, str | None] = Field(
        description="destination → its sha256 in the toolkit at sweep start (null: absent); "
        "what ``promotion apply`` compares-and-swaps against"
    )
    origin: str = Field(
        default=CANDIDATE_ORIGIN,
        description="who wrote the overlay (--candidate-origin); absent in records older than origins",
    )

    def identity(self) -> CandidateOverlay:
        """The part promotion.json stores as ``candidate_overlay``."""
        return CandidateOverlay(digest=self.digest, roles=self.roles, files=self.files)
