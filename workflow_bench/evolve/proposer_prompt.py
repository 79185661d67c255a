"""The proposer's instructions: diagnose one pattern, make one small bounded skill change.

Kept apart from the session mechanics so the rules can be read (and reviewed) in one place.
The sandbox enforces what matters (read-only everything but ``/workspace/.wfbench-output``, no
network, no Bash, no MCP, no skills); the prompt states the same rules so an honest proposer
does not waste its session discovering them, and the validator rejects whatever breaks them.
"""

from __future__ import annotations

from collections.abc import Sequence

OUTPUT_MOUNT = "/workspace/.wfbench-output"
EVIDENCE_MOUNT = "/evidence"


def proposer_prompt(*, generation: int, skills: Sequence[str], required_skills: Sequence[str]) -> str:
    allowed = ", ".join(skills)
    must = ", ".join(required_skills) or "at least one of them"
    return f"""You improve the skill prose of a Claude Code toolkit. Generation {generation}.

Evidence (read-only) is in {EVIDENCE_MOUNT}/: manifest.json lists the files; selected-rows.json holds
the benchmark rows (each with a row_id), transcript-<i>-<j>.jsonl and patch-<i>.diff belong to row i,
gate-summary.json is the last promotion decision, prior-proposal.md the change that was benchmarked,
learnings.json hints from skill runs (hints, not evidence). It may be empty in generation 0.

The incumbent skills are in /workspace/.claude/skills/<skill>/ (read-only).

Task:
1. Diagnose ONE recurring failure or cost pattern caused by the skill text (quality first, then cost).
2. Make ONE small, bounded change. Copy the incumbent file's bytes first, then edit the copy:
   write {OUTPUT_MOUNT}/overlay/skills/<skill>/SKILL.md (Markdown only). You may change only these
   skills: {allowed}; the change must include {must}.
3. Write {OUTPUT_MOUNT}/proposal.md: the failure pattern with the row_ids you cite, the one change,
   the metric you expect to move, and the risks.

Rules: touch nothing outside {OUTPUT_MOUNT}/overlay/ and {OUTPUT_MOUNT}/proposal.md; Markdown only;
never weaken a hard gate the skill states (verification before claiming success, read before edit).
The change is benchmarked against the incumbent on paired arms and ships only if the gate promotes it.
"""
