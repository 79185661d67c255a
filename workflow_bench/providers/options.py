"""Which model the sweep talks to, as validated data: provider flags, credentials, the access they open.

Owns ``ProviderOptions`` (what argv said about the provider, the model and its credentials),
``ProviderOptions.validate`` (every combination of those flags that cannot work is refused with
the flag named, before anything runs) and ``model_access`` (starts the scripted provider or the
LiteLLM gateway when the options ask for one). Credentials come from the flags or from the
``WORKFLOW_BENCH_*`` environment variables named here; they are kept out of ``repr``.
Must never: print or log a credential, or start anything in ``validate``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .access import ModelAccess
from .connect import is_openai_model, openai_access, scripted_access
from .scripted import Script

ANTHROPIC_KEY_ENV = "WORKFLOW_BENCH_ANTHROPIC_API_KEY"
OPENAI_KEY_ENV = "WORKFLOW_BENCH_OPENAI_API_KEY"
AUTH_TOKEN_ENV = "WORKFLOW_BENCH_AUTH_TOKEN"


class ProviderOptionsError(ValueError):
    """A provider, model or credential flag that cannot work: exit 2, nothing run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderOptions:
    """The provider half of argv. ``provider`` is ``anthropic`` or ``scripted``."""

    provider: str
    model: str | None = None
    script: Path | None = None
    base_url: str | None = None
    via_gateway: bool = False
    anthropic_api_key: str | None = field(default=None, repr=False)
    auth_token: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_args(cls, args) -> ProviderOptions:
        """The provider flags of a parsed runner argv (``runner_args``)."""
        return cls(
            provider=args.provider,
            model=args.model,
            script=args.script,
            base_url=args.base_url,
            via_gateway=args.via_gateway,
            anthropic_api_key=args.anthropic_api_key,
            auth_token=args.auth_token,
            openai_api_key=args.openai_api_key,
        )

    @property
    def scripted(self) -> bool:
        return self.provider == "scripted"

    @property
    def needs_gateway(self) -> bool:
        return bool(self.via_gateway or (not self.scripted and is_openai_model(self.model or "")))

    def validate(self) -> None:
        """Refuse every flag combination that cannot work; reads the environment, starts nothing."""
        if self.scripted:
            if self.base_url or self.anthropic_api_key or self.auth_token or self.openai_api_key:
                raise ProviderOptionsError(
                    "--provider scripted serves the model itself; "
                    "drop --base-url/--anthropic-api-key/--auth-token/--openai-api-key"
                )
            return
        if self.via_gateway:
            raise ProviderOptionsError(
                "--via-gateway applies to --provider scripted; OpenAI model ids always use the gateway"
            )
        if self.script:
            raise ProviderOptionsError("--script only applies to --provider scripted")
        if not self.model:
            raise ProviderOptionsError("--model is required with --provider anthropic")
        if is_openai_model(self.model):
            self._validate_openai(self.model)
            return
        if self.openai_api_key:
            raise ProviderOptionsError(
                f"--openai-api-key needs an OpenAI model id (openai/…, gpt-…, chatgpt-…, o<digit>…), "
                f"not {self.model!r}"
            )
        if not (
            self.anthropic_api_key
            or os.environ.get(ANTHROPIC_KEY_ENV)
            or self.auth_token
            or os.environ.get(AUTH_TOKEN_ENV)
        ):
            raise ProviderOptionsError(
                f"--provider anthropic needs --anthropic-api-key (or ${ANTHROPIC_KEY_ENV}) or --auth-token"
            )

    def _validate_openai(self, model: str) -> None:
        if self.base_url or self.anthropic_api_key or self.auth_token:
            raise ProviderOptionsError(
                f"--model {model} is an OpenAI model: it runs through the built-in LiteLLM gateway; "
                "drop --base-url/--anthropic-api-key/--auth-token"
            )
        if not (self.openai_api_key or os.environ.get(OPENAI_KEY_ENV)):
            raise ProviderOptionsError(f"--model {model} needs --openai-api-key (or ${OPENAI_KEY_ENV})")

    @contextlib.contextmanager
    def model_access(self, script: Script | None) -> Iterator[tuple[ModelAccess, str]]:
        """Yield (access, model) for the sweep; starts the scripted provider or the gateway when asked."""
        if script is not None:
            model = self.model or script.model
            with scripted_access(script, model=model, via_gateway=self.via_gateway) as access:
                yield access, model
            return
        if not self.model:  # validate() refuses this first; never guess a model
            raise ProviderOptionsError("--model is required with --provider anthropic")
        if is_openai_model(self.model):
            openai_key = self.openai_api_key or os.environ.get(OPENAI_KEY_ENV)
            if not openai_key:  # validate() refuses this first
                raise ProviderOptionsError(
                    f"--model {self.model} needs --openai-api-key (or ${OPENAI_KEY_ENV})"
                )
            with openai_access(model=self.model, openai_api_key=openai_key) as access:
                yield access, self.model
            return
        yield (
            ModelAccess(
                provider="anthropic",
                base_url=self.base_url or "https://api.anthropic.com",
                api_key=self.anthropic_api_key or os.environ.get(ANTHROPIC_KEY_ENV),
                auth_token=self.auth_token or os.environ.get(AUTH_TOKEN_ENV),
            ),
            self.model,
        )
