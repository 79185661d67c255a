"""The CI workflows in .github/workflows: actionlint (with shellcheck on every `run:` step) finds
nothing, and the rules the workflows promise hold (pinned actions, timeouts, a protected paid job
that runs the canary first, evidence uploaded always, promotion only through a pull request).

Each check has a negative control: a broken copy in tmp_path must fail it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.component

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"
EXPECTED = {"containment.yml", "evolve.yml"}
PINNED = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")


def _actionlint(
    actionlint: Path, shellcheck: Path, files: list[Path], *, json_format: bool = False
) -> subprocess.CompletedProcess:
    # -shellcheck names the binary: actionlint silently skips shell checks when it finds none.
    # -pyflakes= : no step runs Python through `shell: python`.
    # actionlint names a file relative to its working directory when it can (`../../x.yml`), so
    # a test that reads the path back runs it in a known directory and resolves what it prints.
    fmt = ["-format", "{{json .}}"] if json_format else []
    return subprocess.run(
        [str(actionlint), "-no-color", f"-shellcheck={shellcheck}", "-pyflakes=", *fmt, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=WORKFLOWS,
    )


def _workflow_files() -> list[Path]:
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))
    assert {f.name for f in files} >= EXPECTED, f"missing workflows in {WORKFLOWS}"
    return files


def test_actionlint_finds_nothing_in_the_workflows(actionlint_bin, shellcheck_bin):
    result = _actionlint(actionlint_bin, shellcheck_bin, _workflow_files())
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def _copy_with(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = (WORKFLOWS / name).read_text()
    assert old in text, f"{old!r} no longer in {name}: update the negative control"
    broken = tmp_path / name
    broken.write_text(text.replace(old, new, 1))
    return broken


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    ("name", "old", "new", "rule", "finding", "at"),
    [
        # an expression naming an input that does not exist: found on the changed line
        ("evolve.yml", "${{ inputs.proposer_model }}", "${{ inputs.proposer_modle }}", "expression",
         "proposer_modle", "changed"),
        # a job that depends on a job that does not exist: found on that job's key line. (Inputs of
        # actions pinned by SHA are not checked: actionlint knows popular actions' metadata by tag only.)
        ("evolve.yml", "    needs: evolve\n", "    needs: evovle\n", "job-needs", "evovle", "job"),
        # a shell bug only shellcheck sees: proves shellcheck really runs inside actionlint
        ("containment.yml", "run: ./dev canary", "run: cd $HOME/x && ./dev canary", "shellcheck",
         "SC2086", "changed"),
        # not a workflow at all: the parser stops somewhere after the broken line
        ("containment.yml", "jobs:", "jobs: [", "syntax-check", "could not parse as YAML", "after"),
    ],
)  # fmt: skip
def test_actionlint_fails_a_broken_copy(
    tmp_path, actionlint_bin, shellcheck_bin, name, old, new, rule, finding, at
):
    broken = _copy_with(tmp_path, name, old, new)
    result = _actionlint(actionlint_bin, shellcheck_bin, [broken], json_format=True)
    assert result.returncode == 1, result.stdout + result.stderr
    findings = json.loads(result.stdout)
    # The path is compared as a file, never as a spelling (relative or absolute, however deep).
    assert {(WORKFLOWS / f["filepath"]).resolve() for f in findings} == {broken.resolve()}, findings
    matching = [f for f in findings if f["kind"] == rule and finding in f["message"]]
    assert matching, findings
    text = broken.read_text()
    changed = _line_of(text, new)
    lines = text.splitlines()
    if at == "after":
        assert all(f["line"] >= changed for f in matching), (changed, matching)
        return
    if at == "job":  # the nearest job key (`  id:`) above the changed line
        changed = next(n for n in range(changed, 0, -1) if re.fullmatch(r"  [\w-]+:", lines[n - 1]))
    assert [f["line"] for f in matching] == [changed], (changed, matching)


# --- the promises the workflows make, beyond what actionlint checks ----------------------------


def _steps_text(job: dict[str, Any]) -> list[str]:
    return [yaml.safe_dump(step) for step in job.get("steps", [])]


def policy_findings(name: str, doc: dict[str, Any]) -> list[str]:
    """What a workflow breaks of the rules README "CI workflows" states; empty when it keeps them."""
    found = []
    for job_id, job in doc["jobs"].items():
        if "timeout-minutes" not in job:
            found.append(f"{name}:{job_id}: no timeout-minutes")
        for step in job.get("steps", []):
            uses = step.get("uses", "")
            if uses and not uses.startswith("./") and not PINNED.match(uses):
                found.append(f"{name}:{job_id}: {uses} is not pinned by a full commit SHA")
        text = yaml.safe_dump(job)
        if "secrets." in text and "environment" not in job:
            found.append(f"{name}:{job_id}: uses a secret outside a protected environment")
        if re.search(r"git push(?![^\n]*refs/heads/\$BRANCH)", text):
            found.append(f"{name}:{job_id}: git push to anything but the job's own branch")
    if name == "containment.yml":
        on = doc.get(True, doc.get("on"))  # PyYAML reads the key `on` as True
        if not {"push", "pull_request"} <= set(on):
            found.append(f"{name}: not run on every push and pull request")
        if not any("./dev canary" in s for j in doc["jobs"].values() for s in _steps_text(j)):
            found.append(f"{name}: never runs ./dev canary")
    if name == "evolve.yml":
        found += _evolve_findings(doc)
    return found


def _evolve_findings(doc: dict[str, Any]) -> list[str]:
    found = []
    on = doc.get(True, doc.get("on"))
    if not {"schedule", "workflow_dispatch"} <= set(on):
        found.append("evolve.yml: not both scheduled and dispatchable")
    if doc.get("permissions") != {}:
        found.append("evolve.yml: top-level permissions are not empty")
    concurrency = doc.get("concurrency") or {}
    if not concurrency.get("group") or concurrency.get("cancel-in-progress") is not False:
        found.append("evolve.yml: no concurrency group, or it cancels a paid run in progress")
    paid = [j for j in doc["jobs"].values() if "secrets.ANTHROPIC_API_KEY" in yaml.safe_dump(j)]
    if len(paid) != 1:
        return [*found, "evolve.yml: the model key must be used by exactly one job"]
    job, steps = paid[0], _steps_text(paid[0])
    if "pull-requests" in job.get("permissions", {}) or job.get("permissions", {}).get("contents") != "read":
        found.append("evolve.yml: the paid job may write")
    keyed = [i for i, s in enumerate(steps) if "secrets.ANTHROPIC_API_KEY" in s]
    canary = [i for i, s in enumerate(steps) if "./dev canary" in s]
    if len(keyed) != 1 or not canary or canary[0] > keyed[0]:
        found.append("evolve.yml: the canary does not run before the one step holding the key")
    if not any("upload-artifact" in s and "always()" in s for s in steps):
        found.append("evolve.yml: evidence is not uploaded if: always()")
    if not any("gh run download" in s or "download-artifact" in s for s in steps):
        found.append("evolve.yml: not seeded from a previous run's artifact")
    if not any("gh pr create" in s for j in doc["jobs"].values() for s in _steps_text(j)):
        found.append("evolve.yml: a promotion opens no pull request")
    return found


def _load(name: str) -> dict[str, Any]:
    return yaml.safe_load((WORKFLOWS / name).read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_workflows_keep_their_promises(name):
    assert policy_findings(name, _load(name)) == []


@pytest.mark.parametrize(
    ("name", "old", "new", "finding"),
    [
        ("evolve.yml", "@11bd71901bbe5b1630ceea73d27597364c9af683", "@v4", "not pinned"),
        ("containment.yml", "    timeout-minutes: 45\n", "", "no timeout-minutes"),
        ("containment.yml", "  pull_request:\n", "", "every push and pull request"),
        ("evolve.yml", "  cancel-in-progress: false", "  cancel-in-progress: true", "concurrency"),
        ("evolve.yml", "permissions: {}", "permissions: write-all", "top-level permissions"),
        ("evolve.yml", "    environment: evolve\n", "", "outside a protected environment"),
        ("evolve.yml", "          ./dev canary\n", "          true\n", "canary"),
        ("evolve.yml", "        if: always()\n", "", "always()"),
        ("evolve.yml", 'git push origin "HEAD:refs/heads/$BRANCH"', "git push origin HEAD:main", "git push"),
        ("evolve.yml", "gh pr create", "echo gh-pr-create", "pull request"),
    ],
)
def test_a_broken_promise_is_found(tmp_path, name, old, new, finding):
    broken = _copy_with(tmp_path, name, old, new)
    found = policy_findings(name, yaml.safe_load(broken.read_text()))
    assert any(finding in f for f in found), found
