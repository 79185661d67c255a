"""How a sweep reaches its model when something of ours must run: the scripted provider, the gateway.

Each context manager starts what the route needs, yields a ``ModelAccess`` that mints a distinct
credential per cell and observes, per cell, what the model side saw, and stops everything on
exit. Routes:

- ``scripted_access``: the scripted provider alone (Anthropic Messages), or with
  ``via_gateway`` behind a real LiteLLM proxy speaking OpenAI Responses to it;
- ``openai_access``: a LiteLLM proxy in front of OpenAI, holding the OpenAI key; the sandbox
  only ever gets a per-cell gateway key and the proxy's loopback URL.

What a cell's row reports as ``usage_provider`` is decided here: the scripted ledger's completed
requests (declared usage, summed as is), or the gateway's successful requests normalized with the
provider's own arithmetic. A gateway observation that is incomplete (a request without its
outcome line) or that cannot be normalized is reported as unknown, with a warning, never as 0.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from workflow_bench.usage import sum_usage, unknown_usage

from .access import CellKey, ModelAccess, ProviderObservation
from .gateway import (
    Gateway,
    GatewayRoute,
    GatewaySpec,
    UsageSemanticsError,
    normalize_litellm_usage,
)
from .scripted import LedgerEntry, Script, ScriptedProvider

# The reference's routing rule for OpenAI model ids.
OPENAI_MODEL_ID = re.compile(r"(?:openai/|gpt-|chatgpt-|o\d)\S*")
OPENAI_KEY_ENV = "OPENAI_API_KEY"  # inside the proxy process only
LEDGER_FILE = "provider-ledger.jsonl"
GATEWAY_FILE = "gateway-usage.jsonl"

Warn = Callable[[str], None]


def is_openai_model(model: str) -> bool:
    """``openai/…``, ``gpt-…``, ``chatgpt-…`` and ``o<digit>…`` ids go through the gateway."""
    return OPENAI_MODEL_ID.fullmatch(model) is not None


class _Minted:
    """Cell → the credentials minted for it (one cell is run once per sweep)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_cell: dict[CellKey, tuple[str, ...]] = {}

    def put(self, key: CellKey, *values: str) -> None:
        with self._lock:
            self._by_cell[key] = values

    def get(self, key: CellKey) -> tuple[str, ...] | None:
        with self._lock:
            return self._by_cell.get(key)


def _cell_fields(key: CellKey) -> dict[str, Any]:
    return {"task": key.task_id, "arm": key.arm, "run": key.run}


def ledger_usage(entries: Sequence[LedgerEntry]) -> dict[str, int | None]:
    """What the scripted provider served to completion, summed (declared usage; unknown stays None)."""
    return sum_usage([e.usage.to_json() for e in entries if e.completed])


def gateway_lines(
    key: CellKey, records: Sequence[Mapping[str, Any]]
) -> tuple[tuple[dict[str, Any], ...], list[dict[str, int | None]], list[str]]:
    """The cell's usage-log lines as persisted, the normalized usage of its successes, and problems.

    The per-cell tag is dropped (in scripted mode it is the provider key); the cell is named by
    task, arm and run instead.
    """
    lines, normalized, problems = [], [], []
    for record in records:
        line = {k: v for k, v in record.items() if k != "cell"} | _cell_fields(key)
        if record.get("event") == "success":
            try:
                fields = normalize_litellm_usage(record.get("provider"), record.get("usage")).fields()
            except UsageSemanticsError as exc:
                line["normalization_error"] = str(exc)
                problems.append(str(exc))
            else:
                line["normalized"] = fields
                normalized.append(fields)
        lines.append(line)
    return tuple(lines), normalized, problems


def _gateway_observation(
    gateway: Gateway, key: CellKey, tag: str, warn: Warn, extra: Mapping[str, tuple[dict[str, Any], ...]]
) -> ProviderObservation:
    try:
        records, complete = gateway.cell_records(tag)
    except OSError as exc:  # the usage log is ours, but a cell must not crash the sweep over it
        records, complete = (), False
        warn(f"{key.label} cannot read the gateway's usage log: {exc}")
    lines, normalized, problems = gateway_lines(key, records)
    if not complete:
        problems.append("a request has no success/failure line in the gateway's usage log")
    usage = unknown_usage() if problems else sum_usage(normalized)
    for problem in problems:
        warn(f"{key.label} gateway usage unknown: {problem}")
    return ProviderObservation(source="litellm-gateway", usage=usage, records={GATEWAY_FILE: lines, **extra})


@contextlib.contextmanager
def scripted_access(
    script: Script, *, model: str, via_gateway: bool, warn: Warn = print
) -> Iterator[ModelAccess]:
    """The scripted provider, optionally behind a real LiteLLM proxy (``via_gateway``)."""
    minted = _Minted()
    with ScriptedProvider(script) as provider:
        if not via_gateway:

            def mint(key: CellKey) -> str:
                scripted_key = provider.mint_key(task=key.task_id, arm=key.arm, run=key.run)
                minted.put(key, scripted_key)
                return scripted_key

            def observe(key: CellKey) -> ProviderObservation | None:
                found = minted.get(key)
                if found is None:
                    return None
                entries = provider.ledger(found[0])
                lines = tuple(e.to_json() for e in entries)
                return ProviderObservation(
                    source="scripted-ledger", usage=ledger_usage(entries), records={LEDGER_FILE: lines}
                )

            yield ModelAccess(provider="scripted", base_url=provider.base_url, mint=mint, observe=observe)
            return
        route = GatewayRoute(
            model_name=model, upstream_model=f"openai/{model}", api_base=f"{provider.base_url}/v1"
        )
        with Gateway(GatewaySpec(routes=(route,), forward_cell=True)) as gateway:

            def mint_via(key: CellKey) -> str:
                scripted_key = provider.mint_key(task=key.task_id, arm=key.arm, run=key.run)
                # The tag travels upstream as the scripted key, so the ledger attributes as ever.
                gateway_key, tag = gateway.mint_key(tag=scripted_key)
                minted.put(key, scripted_key, tag)
                return gateway_key

            def observe_via(key: CellKey) -> ProviderObservation | None:
                found = minted.get(key)
                if found is None:
                    return None
                ledger = tuple(e.to_json() for e in provider.ledger(found[0]))
                return _gateway_observation(gateway, key, found[1], warn, {LEDGER_FILE: ledger})

            warn(f"workflow-bench: LiteLLM gateway on {gateway.base_url} → scripted provider (Responses API)")
            yield ModelAccess(
                provider="scripted",
                base_url=gateway.base_url,
                mint=mint_via,
                observe=observe_via,
                extra_secrets=gateway.secrets,
            )


@contextlib.contextmanager
def openai_access(*, model: str, openai_api_key: str, warn: Warn = print) -> Iterator[ModelAccess]:
    """A LiteLLM proxy in front of OpenAI's Responses API; the key stays in the proxy process."""
    upstream = model if model.startswith("openai/") else f"openai/{model}"
    spec = GatewaySpec(
        routes=(GatewayRoute(model_name=model, upstream_model=upstream, api_key_env=OPENAI_KEY_ENV),),
        upstream_env={OPENAI_KEY_ENV: openai_api_key},
    )
    minted = _Minted()
    with Gateway(spec) as gateway:

        def mint(key: CellKey) -> str:
            gateway_key, tag = gateway.mint_key()
            minted.put(key, tag)
            return gateway_key

        def observe(key: CellKey) -> ProviderObservation | None:
            found = minted.get(key)
            return None if found is None else _gateway_observation(gateway, key, found[0], warn, {})

        warn(f"workflow-bench: LiteLLM gateway on {gateway.base_url} → OpenAI ({upstream})")
        yield ModelAccess(
            provider="openai",
            base_url=gateway.base_url,
            mint=mint,
            observe=observe,
            extra_secrets=gateway.secrets,
        )
