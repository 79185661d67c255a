"""The model gateway: a supervised loopback LiteLLM proxy and honest, per-cell usage accounting.

Claude Code speaks only the Anthropic Messages API; to run it on OpenAI models (or to exercise
the whole CLI → LiteLLM → OpenAI-Responses chain offline against the scripted provider) the
runner starts one LiteLLM proxy per sweep. Each cell gets its own key, so the provider-side usage
the proxy's callback logs lands in that cell's row.

Public surface: ``Gateway``, ``GatewaySpec``, ``GatewayRoute``, ``GatewayError``,
``locate_litellm``, ``proxy_config`` (the proxy); ``normalize_litellm_usage``,
``normalize_openai_responses_usage``, ``NormalizedUsage``,
``UsageSemanticsError``, ``UnknownProviderError``, ``PROVIDER_SEMANTICS`` (the arithmetic).
Importing this package never imports litellm: only the proxy process does.
"""

from workflow_bench.providers.gateway._gateway import (
    Gateway,
    GatewayError,
    GatewayRoute,
    GatewaySpec,
    locate_litellm,
    proxy_config,
)
from workflow_bench.providers.gateway._usage import (
    PROVIDER_SEMANTICS,
    NormalizedUsage,
    UnknownProviderError,
    UsageSemanticsError,
    normalize_litellm_usage,
    normalize_openai_responses_usage,
)

__all__ = [
    "PROVIDER_SEMANTICS",
    "Gateway",
    "GatewayError",
    "GatewayRoute",
    "GatewaySpec",
    "NormalizedUsage",
    "UnknownProviderError",
    "UsageSemanticsError",
    "locate_litellm",
    "normalize_litellm_usage",
    "normalize_openai_responses_usage",
    "proxy_config",
]
