"""Gateway flags through runner.main(): a bad combination exits 2 before anything starts.

Argument checks run before the sandbox preflight, the task binding and any provider or proxy, so
these run as unit tests: no process is spawned and no output directory appears.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workflow_bench import runner
from workflow_bench.providers.connect import is_openai_model
from workflow_bench.providers.options import OPENAI_KEY_ENV
from workflow_bench.sweep import prepare

pytestmark = pytest.mark.unit
TASKS = Path(__file__).resolve().parents[2] / "tasks.scenarios.yaml"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--via-gateway", "--model", "claude-sonnet-4-5", "--anthropic-api-key", "k"],
            "--via-gateway applies",
        ),
        (["--model", "gpt-5"], "needs --openai-api-key"),
        (["--model", "gpt-5", "--openai-api-key", "k", "--base-url", "http://x"], "built-in LiteLLM gateway"),
        (["--model", "claude-sonnet-4-5", "--openai-api-key", "k"], "needs an OpenAI model id"),
        (["--provider", "scripted", "--openai-api-key", "k"], "serves the model itself"),
    ],
)
def test_bad_gateway_arguments_exit_2_with_nothing_created(tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.delenv(OPENAI_KEY_ENV, raising=False)
    out = tmp_path / "out"
    assert runner.main(["--tasks", str(TASKS), "--out", str(out), *extra]) == runner.EXIT_USAGE
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_openai_key_may_come_from_the_environment(monkeypatch):
    monkeypatch.setenv(OPENAI_KEY_ENV, "sk-from-env")
    args = runner.build_parser().parse_args(["--tasks", str(TASKS), "--model", "gpt-5"])
    prepare.validate_args(args)  # no error: the key is found in the environment


@pytest.mark.parametrize("model", ["gpt-5", "openai/gpt-5-mini", "chatgpt-4o-latest", "o3", "o4-mini"])
def test_openai_model_ids_route_to_the_gateway(model):
    assert is_openai_model(model)


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "scripted-demo", "opus", "o", "gpt", "free-coder"])
def test_other_model_ids_do_not(model):
    assert not is_openai_model(model)
