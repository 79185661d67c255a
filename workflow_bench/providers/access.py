"""How sessions reach a model: endpoint, credentials, and per-cell attribution.

Two sources today: an operator's Anthropic(-compatible) endpoint and key, or
the embedded scripted provider, which mints a distinct key per cell so every
request it serves is attributed to exactly one cell. The credentials go only
into the CLI process environment; ``secrets_for`` lists every value that
redaction must scrub from anything persisted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


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
class ProviderObservation:
    """What the model side (scripted provider or gateway) saw of one cell.

    ``usage`` is the row's ``usage_provider`` (four fields, ``None`` = unknown); ``records`` are
    JSON lines for sweep-level files in the output directory (``provider-ledger.jsonl``,
    ``gateway-usage.jsonl``), already stripped of anything secret and labelled with the cell.
    """

    source: str
    usage: Mapping[str, int | None]
    records: Mapping[str, tuple[Mapping[str, Any], ...]]


@dataclass(frozen=True, slots=True)
class ModelAccess:
    """Endpoint plus a credential source. ``mint`` (per-cell keys) wins over static keys.

    ``observe`` (when something on the model side keeps per-cell accounts) is called once per
    cell after its sessions; it must not raise, and returns ``None`` when it saw nothing.
    """

    provider: str
    base_url: str
    api_key: str | None = None
    auth_token: str | None = None
    mint: Callable[[CellKey], str] | None = None
    observe: Callable[[CellKey], ProviderObservation | None] | None = None
    extra_secrets: tuple[str, ...] = ()
    """Sweep-wide values (gateway master key, upstream keys) redaction must also scrub."""

    def credentials_for(self, key: CellKey) -> CellCredentials:
        if self.mint is not None:
            return CellCredentials(api_key=self.mint(key), auth_token=None)
        return CellCredentials(api_key=self.api_key, auth_token=self.auth_token)

    @property
    def static_secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.api_key, self.auth_token, *self.extra_secrets) if s)
