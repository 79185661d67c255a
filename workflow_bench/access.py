"""How sessions reach a model: endpoint, credentials, and per-cell attribution.

Two sources today: an operator's Anthropic(-compatible) endpoint and key, or
the embedded scripted provider, which mints a distinct key per cell so every
request it serves is attributed to exactly one cell. The credentials go only
into the CLI process environment; ``secrets_for`` lists every value that
redaction must scrub from anything persisted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CellKey:
    """Identity of one cell: task × run × arm (the row's ``task``/``run``/``arm``)."""

    task_id: str
    run: int
    arm: str

    @property
    def label(self) -> str:
        return f"[{self.task_id}][{self.arm}][run {self.run}]"

    @property
    def slug(self) -> str:
        return f"{self.task_id}-{self.arm}-run{self.run}"


@dataclass(frozen=True, slots=True)
class CellCredentials:
    api_key: str | None
    auth_token: str | None

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.api_key, self.auth_token) if s)


@dataclass(frozen=True, slots=True)
class ModelAccess:
    """Endpoint plus a credential source. ``mint`` (scripted provider) wins over static keys."""

    provider: str
    base_url: str
    api_key: str | None = None
    auth_token: str | None = None
    mint: Callable[[CellKey], str] | None = None

    def credentials_for(self, key: CellKey) -> CellCredentials:
        if self.mint is not None:
            return CellCredentials(api_key=self.mint(key), auth_token=None)
        return CellCredentials(api_key=self.api_key, auth_token=self.auth_token)

    @property
    def static_secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.api_key, self.auth_token) if s)
