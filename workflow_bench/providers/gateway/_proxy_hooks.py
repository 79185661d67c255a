"""Runs INSIDE the LiteLLM proxy: per-cell key check, upstream routing, and the usage log.

Copied beside the generated config as ``wfbench_proxy_hooks.py`` and loaded by LiteLLM by path
(``general_settings.custom_auth: wfbench_proxy_hooks.user_api_key_auth`` and
``litellm_settings.callbacks: [wfbench_proxy_hooks.handler]``), the way LiteLLM resolves both
relative to the config file. Besides litellm it imports only ``workflow_bench.providers.gateway._keys``
(standard library only): the proxy runs from the runner's own virtualenv. Configured by
environment variables the gateway sets on the proxy process (``_keys.ENV_*``); they never reach a
sandbox.

Per-cell attribution (measured on LiteLLM 1.108.7): without a database LiteLLM cannot mint
virtual keys, but a ``custom_auth`` function may accept any key it can verify. Each cell gets
``sk-wfbench-<tag>-<mac>`` where mac = HMAC-SHA256(gateway secret, tag); this module verifies it
and returns a ``UserAPIKeyAuth`` whose ``metadata.wfbench_cell`` is the tag, which LiteLLM hands
back to every callback as ``standard_logging_object.metadata.user_api_key_auth_metadata``. No
shared master key ever enters a sandbox, and one cell's key cannot be turned into another's.

The usage log: one JSON line per event, appended to ``$WORKFLOW_BENCH_GATEWAY_USAGE_LOG``:
``request`` (from the pre-call hook, before any upstream call), then exactly one ``success`` or
``failure`` for the same ``call_id``. ``usage`` is ``response_obj.usage`` exactly as LiteLLM hands
it to the callback (its normalized chat-completions shape, not the upstream body); a failure has
``usage: null``, never zeros (LiteLLM's own failure payload says 0 tokens). Only the async hooks
are implemented: on the proxy, LiteLLM 1.108.7 calls the async success/failure hooks and not the
sync ones for ``/v1/messages`` (measured), so implementing both would double-log. Logging never
raises into LiteLLM: a record that cannot be built is logged as ``callback-error``.

With ``$WORKFLOW_BENCH_GATEWAY_FORWARD_CELL=1`` (scripted upstream only) the pre-call hook sends
the cell's tag upstream as the API key, plus the CLI's session and subagent headers, so the
scripted provider attributes and scripts each request exactly as it does without a gateway.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from typing import Any

from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import ProxyException, UserAPIKeyAuth

from workflow_bench.providers.gateway._keys import ENV_FORWARD_CELL, ENV_SECRET, ENV_USAGE_LOG, cell_tag

# Request headers the scripted provider needs to tell sessions and subagents apart.
_FORWARDED_HEADERS = ("x-claude-code-session-id", "x-claude-code-agent-id")
_ERROR_MESSAGE_CHARS = 500
_lock = threading.Lock()


async def user_api_key_auth(request: Any, api_key: str) -> UserAPIKeyAuth:
    """LiteLLM ``custom_auth``: accept exactly the cell keys this gateway minted."""
    tag = cell_tag(api_key, bytes.fromhex(os.environ[ENV_SECRET]))
    if tag is None:
        raise ProxyException(
            message="invalid workflow-bench cell key", type="auth_error", param="api_key", code=401
        )
    return UserAPIKeyAuth(api_key=api_key, key_alias="wfbench-cell", metadata={"wfbench_cell": tag})


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _iso(value: object) -> str | None:
    return value.astimezone(UTC).isoformat(timespec="milliseconds") if isinstance(value, datetime) else None


def _write(record: dict[str, Any]) -> None:
    line = json.dumps(record, sort_keys=True, default=str) + "\n"
    with _lock, open(os.environ[ENV_USAGE_LOG], "a", encoding="utf-8") as handle:
        handle.write(line)


def _cell_of(kwargs: dict[str, Any]) -> str | None:
    logged = kwargs.get("standard_logging_object") or {}
    metadata = logged.get("metadata") or {}
    auth = metadata.get("user_api_key_auth_metadata") or {}
    if isinstance(auth, dict) and isinstance(auth.get("wfbench_cell"), str):
        return auth["wfbench_cell"]
    params = (kwargs.get("litellm_params") or {}).get("metadata") or {}
    auth = params.get("user_api_key_metadata") or {}
    return auth.get("wfbench_cell") if isinstance(auth, dict) else None


def _usage_of(response_obj: object) -> dict[str, Any] | None:
    usage = getattr(response_obj, "usage", None)
    if usage is None and isinstance(response_obj, dict):
        usage = response_obj.get("usage")
    if usage is None:
        return None
    dumped = usage.model_dump() if hasattr(usage, "model_dump") else usage
    return dumped if isinstance(dumped, dict) else None


def _outcome(event: str, kwargs: dict[str, Any], response_obj: object, start: object, end: object) -> dict:
    logged = kwargs.get("standard_logging_object") or {}
    record: dict[str, Any] = {
        "event": event,
        "at": _now(),
        "call_id": kwargs.get("litellm_call_id"),
        "cell": _cell_of(kwargs),
        "provider": kwargs.get("custom_llm_provider") or logged.get("custom_llm_provider"),
        "call_type": kwargs.get("call_type") or logged.get("call_type"),
        "requested_model": logged.get("model_group"),
        "actual_model": kwargs.get("model"),
        "stream": bool(kwargs.get("stream")),
        "response_id": getattr(response_obj, "id", None) if response_obj is not None else None,
        "usage": _usage_of(response_obj) if event == "success" else None,
        "started_at": _iso(start),
        "completed_at": _iso(end),
    }
    if event == "failure":
        exc = kwargs.get("exception")
        record["error"] = {
            "type": type(exc).__name__ if exc is not None else None,
            "status_code": getattr(exc, "status_code", None),
            "message": str(exc)[:_ERROR_MESSAGE_CHARS] if exc is not None else None,
        }
    return record


def _request_record(tag: object, data: dict[str, Any], call_type: object) -> dict[str, Any]:
    return {
        "event": "request",
        "at": _now(),
        "call_id": data.get("litellm_call_id"),
        "cell": tag,
        "call_type": call_type,
        "model": data.get("model"),
    }


def _safely(event: str, build: Any) -> None:
    try:
        _write(build())
    except Exception as exc:  # a logging hook must never break the proxy; record that it failed
        _write({"event": "callback-error", "at": _now(), "for": event, "error": repr(exc)[:500]})


class WorkflowBenchHooks(CustomLogger):
    """Pre-call routing plus one usage line per upstream request, success and failure alike."""

    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        tag = (user_api_key_dict.metadata or {}).get("wfbench_cell")
        _safely("request", lambda: _request_record(tag, data, call_type))
        if os.environ.get(ENV_FORWARD_CELL) == "1" and isinstance(tag, str):
            request = data.get("proxy_server_request") or {}
            headers = {str(k).lower(): v for k, v in (request.get("headers") or {}).items()}
            forwarded = {name: headers[name] for name in _FORWARDED_HEADERS if headers.get(name)}
            data["api_key"] = tag
            data["extra_headers"] = {**(data.get("extra_headers") or {}), **forwarded}
        return data

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        _safely("success", lambda: _outcome("success", kwargs, response_obj, start_time, end_time))

    async def async_log_failure_event(self, kwargs, response_obj, start_time, end_time):
        _safely("failure", lambda: _outcome("failure", kwargs, response_obj, start_time, end_time))


handler = WorkflowBenchHooks()
