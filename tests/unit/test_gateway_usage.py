"""Provider-native usage arithmetic, per-cell gateway keys, and the Responses wire's usage encoding.

Every rule has a negative control: the arithmetic that would be wrong (adding cached tokens to a
whole, reading an unreported count as 0, guessing an unknown provider) is shown to give a
different answer or to be refused.
"""

from __future__ import annotations

import pytest

from workflow_bench.providers.gateway import (
    NormalizedUsage,
    UnknownProviderError,
    UsageSemanticsError,
    normalize_litellm_usage,
    normalize_openai_responses_usage,
)
from workflow_bench.providers.gateway._keys import cell_tag, mint_cell_key
from workflow_bench.providers.scripted import Usage
from workflow_bench.providers.scripted._responses import wire_usage
from workflow_bench.usage import sum_usage

pytestmark = pytest.mark.unit

# The shape LiteLLM 1.108.7 hands its callback (captured in tests/component/test_gateway.py).
LITELLM_CACHED = {
    "prompt_tokens": 48000,
    "completion_tokens": 20,
    "total_tokens": 48020,
    "prompt_tokens_details": {"cached_tokens": 44000, "cache_write_tokens": None, "audio_tokens": None},
    "completion_tokens_details": {"reasoning_tokens": 5},
}


def test_openai_cached_tokens_are_a_part_of_the_whole_prompt() -> None:
    usage = normalize_litellm_usage("openai", LITELLM_CACHED)
    assert usage.fields() == {
        "input_tokens": 4000,
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": 44000,
        "output_tokens": 20,
    }
    assert usage.prompt_tokens == 48000
    # Negative control: Anthropic's arithmetic (cache adds to input) would claim 92k input tokens.
    assert usage.input_tokens + usage.cache_read_input_tokens == usage.prompt_tokens != 48000 + 44000


def test_cache_writes_are_split_out_of_the_whole_too() -> None:
    native = {
        "prompt_tokens": 48000,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 44000, "cache_write_tokens": 1000},
    }
    assert normalize_litellm_usage("openai", native).input_tokens == 3000
    # LiteLLM also mirrors the write count as cache_creation_tokens; either name is read.
    mirrored = {**native, "prompt_tokens_details": {"cached_tokens": 44000, "cache_creation_tokens": 1000}}
    assert normalize_litellm_usage("openai", mirrored).cache_creation_input_tokens == 1000


def test_unreported_cache_counts_stay_unknown_never_zero() -> None:
    usage = normalize_litellm_usage(
        "openai", {"prompt_tokens": 500, "completion_tokens": 9, "prompt_tokens_details": None}
    )
    assert usage == NormalizedUsage(None, None, None, 9, prompt_tokens=500)
    # Negative control: reading the missing cached count as 0 would invent a 500-token ordinary input.
    assert usage.input_tokens is None and usage.cache_read_input_tokens is None


def test_a_failed_request_is_all_unknown() -> None:
    assert normalize_litellm_usage("openai", None).fields() == dict.fromkeys(
        ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    )


@pytest.mark.parametrize("provider", ["anthropic", "ollama", "openrouter", None, ""])
def test_an_unrecognised_provider_is_refused_not_guessed(provider) -> None:
    with pytest.raises(UnknownProviderError, match="not verified"):
        normalize_litellm_usage(provider, LITELLM_CACHED)


@pytest.mark.parametrize(
    "native",
    [
        {"prompt_tokens": 100, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 101}},
        {
            "prompt_tokens": 100,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 41},
        },
        {"prompt_tokens": -1, "completion_tokens": 1},
        {"prompt_tokens": True, "completion_tokens": 1},
        {"prompt_tokens": 1.5, "completion_tokens": 1},
        {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": [1]},
    ],
)
def test_numbers_the_arithmetic_cannot_hold_are_errors(native) -> None:
    with pytest.raises(UsageSemanticsError):
        normalize_litellm_usage("openai", native)


def test_raw_responses_usage_follows_the_same_arithmetic() -> None:
    raw = {"input_tokens": 48000, "output_tokens": 20, "input_tokens_details": {"cached_tokens": 44000}}
    assert normalize_openai_responses_usage(raw).input_tokens == 4000
    assert normalize_openai_responses_usage({"input_tokens": 7, "output_tokens": 1}).input_tokens is None


@pytest.mark.parametrize(
    "declared",
    [
        Usage(
            input_tokens=4000, output_tokens=20, cache_read_input_tokens=44000, cache_creation_input_tokens=0
        ),
        Usage(
            input_tokens=3000,
            output_tokens=5,
            cache_read_input_tokens=44000,
            cache_creation_input_tokens=1000,
        ),
        Usage(input_tokens=7, output_tokens=1, cache_read_input_tokens=0),
    ],
)
def test_scripted_responses_usage_round_trips_to_the_declared_fields(declared: Usage) -> None:
    wire = wire_usage(declared)
    assert wire["input_tokens"] == sum(
        v or 0
        for v in (
            declared.input_tokens,
            declared.cache_read_input_tokens,
            declared.cache_creation_input_tokens,
        )
    )
    back = normalize_openai_responses_usage(wire).fields()
    assert back == {k: declared.to_json()[k] for k in back}


def test_undeclared_cache_fields_are_omitted_on_the_responses_wire() -> None:
    wire = wire_usage(Usage(input_tokens=500, output_tokens=9))
    assert wire == {"input_tokens": 500, "output_tokens": 9, "total_tokens": 509}
    only_read = wire_usage(Usage(input_tokens=1, output_tokens=1, cache_read_input_tokens=2))
    assert only_read["input_tokens_details"] == {"cached_tokens": 2}


def test_sum_usage_keeps_unknown_unknown() -> None:
    a = {
        "input_tokens": 1,
        "cache_creation_input_tokens": 2,
        "cache_read_input_tokens": 3,
        "output_tokens": 4,
    }
    b = {**a, "cache_read_input_tokens": None}
    assert sum_usage([a, a]) == {k: 2 * v for k, v in a.items()}
    assert sum_usage([a, b])["cache_read_input_tokens"] is None and sum_usage([a, b])["input_tokens"] == 2
    assert set(sum_usage([]).values()) == {None}  # nothing observed is not zero


def test_cell_keys_verify_only_with_their_own_secret_and_tag() -> None:
    secret, other = b"s" * 32, b"t" * 32
    key = mint_cell_key(secret, "sk-scripted-abc")
    assert key.startswith("sk-wfbench-sk-scripted-abc-") and cell_tag(key, secret) == "sk-scripted-abc"
    assert cell_tag(key, other) is None  # another gateway's secret
    assert cell_tag(key[:-1] + ("0" if key[-1] != "0" else "1"), secret) is None  # forged mac
    forged = mint_cell_key(other, "victim")
    assert cell_tag(forged, secret) is None
    assert cell_tag(key.replace("abc", "abd"), secret) is None  # someone else's tag, same mac
    for bad in ("", "sk-wfbench-", None, 5, "sk-other-" + key[11:]):
        assert cell_tag(bad, secret) is None
    with pytest.raises(ValueError, match="must match"):
        mint_cell_key(secret, "has space")


# A refused record names the field it refuses, so a bad gateway record can be found and fixed.
@pytest.mark.parametrize(
    ("normalize", "usage", "field"),
    [
        ("litellm", {"prompt_tokens": -1}, "prompt_tokens"),
        ("litellm", {"prompt_tokens_details": {"cached_tokens": "9"}}, "prompt_tokens_details.cached_tokens"),
        (
            "litellm",
            {"prompt_tokens_details": {"cache_write_tokens": -2}},
            "prompt_tokens_details.cache_write_tokens",
        ),
        (
            "litellm",
            {"prompt_tokens_details": {"cache_creation_tokens": True}},
            "prompt_tokens_details.cache_write_tokens",
        ),
        ("litellm", {"completion_tokens": 2.0}, "completion_tokens"),
        (
            "litellm",
            {"prompt_tokens_details": [1]},
            "prompt_tokens_details: want an object or null, got list",
        ),
        ("responses", {"input_tokens": -1}, "input_tokens"),
        ("responses", {"input_tokens_details": {"cached_tokens": "9"}}, "input_tokens_details.cached_tokens"),
        (
            "responses",
            {"input_tokens_details": {"cache_write_tokens": -2}},
            "input_tokens_details.cache_write_tokens",
        ),
        ("responses", {"output_tokens": False}, "output_tokens"),
        ("responses", {"input_tokens_details": 3}, "input_tokens_details: want an object or null, got int"),
    ],
)
def test_a_refused_value_is_named_in_the_error(normalize, usage, field) -> None:
    with pytest.raises(UsageSemanticsError) as raised:
        if normalize == "litellm":
            normalize_litellm_usage("openai", usage)
        else:
            normalize_openai_responses_usage(usage)
    assert str(raised.value).startswith(field), str(raised.value)


def test_parts_may_fill_the_whole_prompt_exactly() -> None:
    whole = {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 40}}
    assert normalize_litellm_usage("openai", whole).input_tokens == 0  # zero is a value, not an error
    with pytest.raises(
        UsageSemanticsError, match=r"cached \(60\) \+ cache-write \(41\) tokens exceed the whole"
    ):
        normalize_litellm_usage(
            "openai",
            {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 41}},
        )


def test_the_refusal_of_an_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(UnknownProviderError, match=r"known: openai$"):
        normalize_litellm_usage("anthropic", LITELLM_CACHED)


def test_a_failed_responses_request_is_all_unknown() -> None:
    assert normalize_openai_responses_usage(None) == NormalizedUsage(
        None, None, None, None, prompt_tokens=None
    )
