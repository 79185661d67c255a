"""Provider-native usage arithmetic: what a gateway's usage log means in our four fields.

Pure functions, no I/O. Our rows use Anthropic's four fields, where ``input_tokens`` is the
*ordinary* (uncached) remainder and the two cache fields add to it. Providers disagree:

- Anthropic Messages: ``input_tokens`` is already the remainder; cache fields add to it (the
  scripted provider's ledger declares usage this way, so it sums as is).
- OpenAI (and LiteLLM's normalized usage, which is what a LiteLLM callback is handed — measured on
  1.108.7: a chat-completions-shaped ``Usage`` with ``prompt_tokens`` and
  ``prompt_tokens_details``, never the upstream body): the prompt count is the *whole* and
  ``cached_tokens`` / ``cache_write_tokens`` are parts of it, so ordinary = whole − parts.

Rules, each with a test and a negative control:

- unknown stays ``None``, never 0: a count nobody reported is unknown, and the ordinary remainder
  of a whole whose cached part was not reported is unknown too (it cannot be split);
- an unreported ``cache_write_tokens`` is not split out of the whole (OpenAI reports no cache
  writes at all; its price for them is the ordinary input price);
- parts larger than the whole raise ``UsageSemanticsError`` rather than yield a negative count;
- a provider label not in ``PROVIDER_SEMANTICS`` raises ``UnknownProviderError``: its arithmetic
  is refused, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from workflow_bench.usage import USAGE_FIELDS

# LiteLLM's provider label (``custom_llm_provider``) → the arithmetic of the usage LiteLLM hands
# its callbacks for it. Only what was measured end to end is listed (tests/e2e/test_gateway.py).
PROVIDER_SEMANTICS: Mapping[str, str] = MappingProxyType({"openai": "whole-with-parts"})


class UsageSemanticsError(ValueError):
    """A usage record whose numbers contradict its provider's arithmetic."""


class UnknownProviderError(UsageSemanticsError):
    """A provider whose usage arithmetic we have not verified; refused rather than guessed."""


@dataclass(frozen=True, slots=True)
class NormalizedUsage:
    """One request's usage in our fields. ``None`` = not reported (never 0)."""

    input_tokens: int | None
    """Ordinary (uncached) input."""
    cache_creation_input_tokens: int | None
    cache_read_input_tokens: int | None
    output_tokens: int | None
    """All output, reasoning included."""
    prompt_tokens: int | None = None
    """The whole prompt as the provider counted it (ordinary + cache reads + cache writes)."""

    def fields(self) -> dict[str, int | None]:
        return {name: getattr(self, name) for name in USAGE_FIELDS}


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageSemanticsError(f"{where}: want a non-negative int or null, got {value!r}")
    return value


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    details = usage.get(key)
    if details is None:
        return {}
    if not isinstance(details, Mapping):
        raise UsageSemanticsError(f"{key}: want an object or null, got {type(details).__name__}")
    return details


def _whole_with_parts(
    whole: int | None, cached: int | None, written: int | None, output: int | None
) -> NormalizedUsage:
    ordinary = None
    if whole is not None and cached is not None:
        ordinary = whole - cached - (written or 0)
        if ordinary < 0:
            raise UsageSemanticsError(
                f"cached ({cached}) + cache-write ({written}) tokens exceed the whole prompt ({whole})"
            )
    return NormalizedUsage(
        input_tokens=ordinary,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=cached,
        output_tokens=output,
        prompt_tokens=whole,
    )


def normalize_litellm_usage(provider: str | None, usage: Mapping[str, Any] | None) -> NormalizedUsage:
    """The usage a LiteLLM callback received (``response_obj.usage`` as a dict) in our fields.

    Raises ``UnknownProviderError`` for a provider label outside ``PROVIDER_SEMANTICS`` and
    ``UsageSemanticsError`` for numbers its arithmetic cannot hold. ``usage=None`` (a failed
    request) is all unknown.
    """
    if provider not in PROVIDER_SEMANTICS:
        raise UnknownProviderError(
            f"provider {provider!r}: usage arithmetic not verified; known: {', '.join(PROVIDER_SEMANTICS)}"
        )
    if usage is None:
        return NormalizedUsage(None, None, None, None)
    details = _details(usage, "prompt_tokens_details")
    written = details.get("cache_write_tokens")
    if written is None:
        written = details.get("cache_creation_tokens")
    return _whole_with_parts(
        _count(usage.get("prompt_tokens"), "prompt_tokens"),
        _count(details.get("cached_tokens"), "prompt_tokens_details.cached_tokens"),
        _count(written, "prompt_tokens_details.cache_write_tokens"),
        _count(usage.get("completion_tokens"), "completion_tokens"),
    )


def normalize_openai_responses_usage(usage: Mapping[str, Any] | None) -> NormalizedUsage:
    """A raw OpenAI Responses ``usage`` object (whole ``input_tokens`` with detail parts)."""
    if usage is None:
        return NormalizedUsage(None, None, None, None)
    details = _details(usage, "input_tokens_details")
    return _whole_with_parts(
        _count(usage.get("input_tokens"), "input_tokens"),
        _count(details.get("cached_tokens"), "input_tokens_details.cached_tokens"),
        _count(details.get("cache_write_tokens"), "input_tokens_details.cache_write_tokens"),
        _count(usage.get("output_tokens"), "output_tokens"),
    )
