"""The results.jsonl row schema: every field, its meaning, and the schema version.

Reports, reuse and promotion all read rows, so a field is never renamed or
repurposed silently: change ``ROW_FIELDS`` and bump ``SCHEMA_VERSION``.
Every row carries every field; a value that was not measured is ``null``
(never 0). ``docs/results-schema.md`` is generated from this table
(``python -m workflow_bench.row_schema > docs/results-schema.md``) and a test
fails when the two drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from workflow_bench.review.score import REVIEW_ROW_FIELDS

SCHEMA_VERSION = 5

_FIELDS: tuple[tuple[str, str, str], ...] = (
    # (section, name, meaning)
    ("identity", "schema_version", f"version of this schema ({SCHEMA_VERSION})"),
    ("identity", "task", "task id"),
    ("identity", "class", "task class from the task file"),
    ("identity", "arm", "arm name"),
    ("identity", "run", "0-based repetition index"),
    ("identity", "recorded_at", "UTC ISO time the row was built"),
    ("outcome", "ok", "every session finished cleanly with verified evidence"),
    ("outcome", "resolved", "ok AND authored tests passed AND hidden oracle passed"),
    (
        "outcome",
        "error_kind",
        "first failure kind (see judging/outcomes.py / the report legend), null when none",
    ),
    ("outcome", "error_detail", "redacted cause of error_kind: a string, or for session-error an object"),
    (
        "outcome",
        "authored_tests_passed",
        "the task's verify passed (workspace read-only, no network), judged on the judge runner's "
        "nonce-bound outcome report: every expected test (the lock `tasks check` wrote) reported and "
        "passed, else at least verify_min_tests tests all passed; a task declaring neither is judged "
        "by verify's exit status",
    ),
    ("outcome", "authored_test_output", "tail (≤4000 chars) of the verify output, redacted"),
    ("outcome", "verify_output", "alias of authored_test_output (reference compatibility)"),
    (
        "outcome",
        "oracle_passed",
        "the hidden oracle proved success: its nonce-bound outcome report, written by the harness's "
        "judge runner outside the workspace, shows every expected test (lock) passed, else at least "
        "oracle.min_tests (default 1) tests run and all passed; and the command exited 0",
    ),
    (
        "outcome",
        "oracle_tests_run",
        "distinct tests the oracle reported (result lines and JUnit XML merged by normalized id); null "
        "when nothing reported any test or the report was no evidence (never 0 for unknown)",
    ),
    ("outcome", "oracle_tests_passed", "of those, tests that passed; null as oracle_tests_run"),
    ("outcome", "oracle_tests_skipped", "of those, tests reported skipped; null as oracle_tests_run"),
    (
        "outcome",
        "oracle_tests",
        "{tests: [{id, outcome, message}], omitted}: the oracle's tests (normalized ids; outcome "
        "passed | failed | error | skipped), failures first, at most 200; message always null (it "
        "may quote the hidden tests); omitted counts the rest; null as oracle_tests_run",
    ),
    (
        "outcome",
        "verify_detail",
        "how verify was judged: the verdict with its reasons (which tests failed, were missing or "
        "skipped; counts; exit status), or 'exit status N' when the task declares no verify_min_tests "
        "and has no expected tests",
    ),
    ("outcome", "verify_tests_run", "distinct tests verify reported; null when nothing reported any test"),
    ("outcome", "verify_tests_passed", "of those, tests that passed; null as verify_tests_run"),
    ("outcome", "verify_tests_skipped", "of those, tests reported skipped; null as verify_tests_run"),
    (
        "outcome",
        "verify_tests",
        "{tests: [{id, outcome, message}], omitted}: verify's tests as oracle_tests, with the first "
        "300 characters of each failure's message, redacted; null as verify_tests_run",
    ),
    (
        "outcome",
        "oracle_output",
        "'hidden oracle passed: ' / 'hidden oracle failed: ' and the harness's verdict on the outcome "
        "report (counts, or why it is no proof); oracle output is never kept",
    ),
    (
        "usage",
        "input_tokens",
        "sum over sessions of the main conversation's usage as the relay saw it served (the wire "
        "record: evidence of record; the CLI result's usage must equal it, else evidence-tampered); "
        "null if unknown",
    ),
    ("usage", "cache_creation_input_tokens", "as input_tokens"),
    ("usage", "cache_read_input_tokens", "as input_tokens"),
    ("usage", "output_tokens", "as input_tokens"),
    (
        "usage",
        "cost_usd",
        "sum of the CLI's total_cost_usd (includes subagents); null if any session lacked it, or "
        "if the relay served a thread the CLI never opened (its spend is in usage_wire, never priced)",
    ),
    ("usage", "duration_s", "sum of the CLI's duration_ms / 1000 (process wall time when absent)"),
    (
        "usage",
        "cell_wall_s",
        "wall time of the whole cell on its executor (workspace, sessions, verify, oracle, capture), s; "
        "what --order longest-first learns from",
    ),
    ("usage", "num_turns", "sum of the CLI's num_turns"),
    (
        "usage",
        "usage_main_loop",
        "{input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens}: the "
        "CLI result's usage summed over sessions (the four fields above): the main loop only",
    ),
    (
        "usage",
        "usage_wire",
        "same four fields over every message the relay saw served (main loop and subagents, each "
        "message id once, cut streams included): the provider's spend as the host observed it",
    ),
    (
        "usage",
        "usage_transcripts",
        "same four fields summed over every assistant message of the parent-captured streams, "
        "subagents included, deduplicated by message.id; null fields when the stream carried no "
        "real usage (through a LiteLLM gateway its per-message usage is all zeros). CLI 2.1.332 "
        "reports output_tokens from message_start, so against a real API output is a lower bound",
    ),
    (
        "usage",
        "usage_provider",
        "same four fields as the model side observed them for this cell: the scripted provider's "
        "ledger (completed requests) or the LiteLLM gateway's usage log (successful requests, "
        "provider-native arithmetic); null when nothing observed the cell's requests",
    ),
    (
        "usage",
        "usage_provider_source",
        "'scripted-ledger', 'litellm-gateway', or null: who observed usage_provider",
    ),
    ("evidence", "sessions", "number of sessions that ran"),
    ("evidence", "session_ids", "CLI session ids, in order"),
    (
        "evidence",
        "skill_invoked",
        "true: every expected skill proven invoked (the model requested Skill for it and a later "
        "request carried a non-error result, per the wire record); false: one was not; null: no skill",
    ),
    ("evidence", "transcript_missing", "a session's evidence could not be verified from its stream"),
    ("evidence", "evidence_diagnostics", "why evidence was unverifiable, if it was"),
    (
        "evidence",
        "tool_use_counts",
        "tool name → number of tool calls the model made across sessions (wire record); MCP tools "
        "count per tool under their full name mcp__<server>__<tool>",
    ),
    (
        "evidence",
        "relay_refused_requests",
        "requests the model relay refused (another path, model or session, malformed or oversized, "
        "over the connection cap); never forwarded",
    ),
    ("evidence", "wire_artifacts", "per-session wire record files (one JSON line per exchange, no bodies)"),
    ("evidence", "plan_produced", "false only for a plan→work arm whose plan document was not accepted"),
    ("evidence", "plan_doc", "the accepted plan document (repo-relative), or null"),
    ("evidence", "skill_digest", "fingerprint of the seeded skill files the sessions had to leave intact"),
    ("evidence", "transcript_artifacts", "[{path, sha256, bytes, source}] of the redacted session streams"),
    ("evidence", "patch_artifact", "file name of the final working-tree diff, or null"),
    ("churn", "diff_files", "files changed vs the starting commit (plan docs and skills excluded)"),
    ("churn", "diff_insertions", "lines inserted (same exclusions)"),
    ("churn", "diff_deletions", "lines deleted (same exclusions)"),
    ("provenance", "model", "model id the sessions ran on"),
    ("provenance", "benchmark_model", "same as model (reference compatibility)"),
    ("provenance", "effort", "Claude Code --effort level, or null for the CLI default"),
    (
        "provenance",
        "provider",
        "'anthropic', 'openai' (through the LiteLLM gateway) or 'scripted' (a scripted row measures "
        "the pipeline, not a model)",
    ),
    ("provenance", "claude_code_version", "version of the Claude Code CLI that ran the sessions"),
    (
        "provenance",
        "runtime_digest",
        "digest of what the cell ran on (CLI version, harness sources, sandbox backend, provider, script); "
        "--reuse-results requires it equal",
    ),
    ("provenance", "reused", "true when copied from --reuse-results instead of paid in this sweep"),
    ("provenance", "reused_from_dir", "the --reuse-results directory a reused row came from; else null"),
    (
        "provenance",
        "reused_from_recorded_at",
        "when a reused row was originally measured (its first recorded_at); else null",
    ),
    ("provenance", "sandbox_backend", "'bwrap', or 'host-unsafe' for --unsafe-no-bwrap review sweeps"),
    (
        "provenance",
        "resource_limits",
        "bounds the cell ran under: {memory_mib, pids, disk_mib, cpus, files, nofile_per_process, "
        "msgqueue_bytes, ptys, cell_uid, namespace_limits, seccomp_denied, sampled} (disk = room over "
        "the clone; cpus = CFS quota in cores; files = open descriptors of the whole cell; ptys = its "
        "devpts max; cell_uid = the unprivileged host uid its processes ran as, root runner only; "
        "namespace_limits = the /proc/sys/user limits of its user namespace; seccomp_denied = the "
        "syscalls refused); a bound is enforced by the kernel (cgroup, loop volume, devpts, uid: root; "
        "rlimits, user namespace, seccomp: any invoker) or, listed in sampled, by the host-side "
        "watchdog; null for a bound not enforced at all",
    ),
    ("provenance", "task_ref", "the ref named in the task file"),
    ("provenance", "task_base_sha", "the immutable commit the ref resolved to"),
    (
        "provenance",
        "sanitized_task_sha",
        "the parentless snapshot commit every clone of the task starts from",
    ),
    ("provenance", "variant_head_sha", "HEAD after skill seeding and setup: the diff base"),
    ("provenance", "task_prompt_digest", "sha256 of the task prompt (canonical JSON)"),
    ("provenance", "task_binding_digest", "digest of the whole bound task definition"),
    ("provenance", "oracle_digest", "digest of the hidden oracle command and files"),
    ("provenance", "oracle_command_digest", "digest of the oracle command"),
    ("provenance", "oracle_manifest_digest", "digest of the oracle file manifest (target, sha256, size)"),
    (
        "provenance",
        "expected_tests_digest",
        "digest of the task's expected-tests lock entry that judged verify and the oracle (part of "
        "task_binding_digest); null when the task has no lock",
    ),
    (
        "provenance",
        "ce_plugin_version",
        "comparator plugin version (ce_* arms only), verified against its manifest",
    ),
    ("provenance", "ce_plugin_manifest_digest", "digest of the comparator plugin snapshot (ce_* arms only)"),
    (
        "provenance",
        "candidate_overlay_digest",
        "digest of the candidate skill overlay (candidate_* arms only)",
    ),
    ("toolkit", "toolkit_name", "name from the evaluated toolkit's toolkit.yaml"),
    ("toolkit", "toolkit_version", "version from toolkit.yaml"),
    (
        "toolkit",
        "toolkit_digest",
        "sha256 over toolkit.yaml and every file of its role skills; null for a toolkit built in code",
    ),
    (
        "toolkit",
        "index_digest",
        "digest of the code-graph index the cell got (reproducible: the toolkit's volatile index files "
        "count by name, its digest command's dump by its sorted lines); null when none",
    ),
    (
        "toolkit",
        "mcp_servers",
        "names of the toolkit MCP servers in the sessions' strict --mcp-config ([] for baseline_nomcp)",
    ),
    ("review", "review_artifact", "file name of the copied review artifact (review arms), or null"),
    ("review", "review_evidence_valid", "the artifact met the contract and the workspace was untouched"),
    ("review", "review_score", "the full score object (review arms with a valid artifact), or null"),
    *(
        ("review", name, "review metric (workflow_bench/review/score.py); null when not scored")
        for name in REVIEW_ROW_FIELDS
    ),
)

ROW_FIELDS: Mapping[str, str] = MappingProxyType({name: meaning for _, name, meaning in _FIELDS})


class RowSchemaError(ValueError):
    pass


def complete_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every schema field present (missing ones ``None``), in schema order; unknown keys refused."""
    unknown = sorted(set(row) - set(ROW_FIELDS))
    if unknown:
        raise RowSchemaError(f"row has fields outside the schema: {unknown}; add them to row_schema.py")
    return {name: row.get(name) for name in ROW_FIELDS}


def render_markdown() -> str:
    lines = [
        "# results.jsonl row schema",
        "",
        f"Schema version {SCHEMA_VERSION}. One JSON object per cell, appended and fsynced as the cell",
        "finishes. Every row has every field; `null` means not measured (never 0).",
        "Generated from `workflow_bench/row_schema.py`; do not edit by hand.",
    ]
    section = None
    for current, name, meaning in _FIELDS:
        if current != section:
            lines += ["", f"## {current}", "", "| field | meaning |", "| --- | --- |"]
            section = current
        lines.append(f"| `{name}` | {meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
