"""The shipped promotion scenario scripts and task files are exactly what the generator derives."""

from __future__ import annotations

import pytest
import yaml

from workflow_bench.corpus.promotion_scenarios import REPO_ROOT, SCENARIOS, generated_files
from workflow_bench.providers.scripted import load_script

pytestmark = pytest.mark.unit


def test_generated_scenario_files_are_current() -> None:
    for path, text in generated_files().items():
        assert path.read_text() == text, (
            f"{path} drifted: python -m workflow_bench.corpus.promotion_scenarios"
        )


def test_scenario_scripts_load_and_task_files_match_their_sources() -> None:
    for scenario in SCENARIOS.values():
        load_script(scenario.script)
    for name, source in (
        ("tasks.promotion.yaml", "tasks.scenarios.yaml"),
        ("tasks.promotion-review.yaml", "tasks.review.yaml"),
    ):
        [task] = yaml.safe_load((REPO_ROOT / name).read_text())["tasks"]
        assert task in yaml.safe_load((REPO_ROOT / source).read_text())["tasks"]
