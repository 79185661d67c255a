"""The results.jsonl row: one typed model (``Row``), assembled from the parts each layer writes.
Over 400 lines on purpose: every row field's one declaration (type and meaning) is this table.

A field is declared once, in its part, with its type and its meaning (the ``description``, which
``docs/results-schema.md`` and ``docs/results-schema.json`` are generated from): the judges' parts
live in ``rows.judgement``, the records a field holds (``Usage``, ``JudgedTests`` …) and the
``Part`` base in ``rows.records``, every other part here. Each part is one writer's contribution,
so a newcomer finds a field by who produces it:

- ``Identity`` (cells.rows): which cell; ``Resolution`` (cells.run): ok, resolved, the first error;
- ``SessionLayer`` (cells.session_fold): what the sessions measured and proved;
- ``VerifyJudgement``/``OracleJudgement`` (cells.run, from judging): the two judges' findings;
- ``Churn`` (workspace.patch), ``Review`` (review scoring), ``ProviderUsage`` (the model side);
- ``Provenance`` (cells.rows): what the cell ran on, against which commit, toolkit and bounds;
- ``DriverRecord`` (sweep driver, reuse): wall time, runtime digest, reuse;
- ``Artifacts`` (output directory): the files the row points at.

Every model is frozen with ``extra="forbid"`` and strict types: a typo in a field name or a
value of the wrong type fails where the row is built, never as a silent ``None`` three modules
later. ``None`` means not measured (never 0). Adding a row field is one declaration in its part
(plus its use); bump ``SCHEMA_VERSION`` when a field is added or changes meaning, and teach
``rows.migrate`` what older rows lack. Must never: import from cells, reports or anything above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, Optional

from workflow_bench.judging.outcomes import ErrorKind
from workflow_bench.providers.access import CellKey
from workflow_bench.review.score import ReviewMetrics, ReviewScore, review_row_fields

# Re-exported: a writer imports its part and the records it fills from here, the one model module.
from .judgement import CleanRoomJudgement as CleanRoomJudgement
from .judgement import OracleJudgement as OracleJudgement
from .judgement import VerifyJudgement as VerifyJudgement
from .records import JudgedTest as JudgedTest
from .records import JudgedTests as JudgedTests
from .records import Number
from .records import Part as Part
from .records import RegradeBefore as RegradeBefore
from .records import ResourceLimits as ResourceLimits
from .records import RuntimeRecord as RuntimeRecord
from .records import Sealing as Sealing
from .records import Strict as Strict
from .records import TranscriptArtifact as TranscriptArtifact
from .records import Usage as Usage
from .records import row_field as _f

SCHEMA_VERSION = 10
"""10 added ``clone_kind`` and ``clone_reason`` (an overlay of the template or a copy, and why),
the clean room (``cleanroom_oracle_passed``, ``cleanroom_detail``) and regrade's ``regraded_from``,
``regrade_before``, ``regrade_verify_digest`` and ``regrade_change``,
and ``oracle_sealed`` became one of ``sealed`` / ``unsealed`` / ``unknown`` (was true / false /
null; migrated as such), the words of the expected-test lock and the docs; 9 added
``relay_forked_requests``, ``relay_upstream_retries`` (provider-side transport faults the relay
retried) and ``cli_config_written`` (CLI configuration the agent
wrote, which no session read), and ``cost_usd`` became every exchange the relay served,
priced (was the CLI's total_cost_usd); 8 added ``task_runtimes``, ``oracle_sealed``,
``test_config_changed`` and ``task_impossible``; 7 added ``skills_expected``, ``skills_invoked``
and ``mcp_tools_granted`` (did the treatment fire); 6: the typed row (closed ``error_kind``,
every field present and typed), the kernel budgets in ``resource_limits`` (``cpus`` …
``seccomp_denied``) and ``cost_usd`` unknown when the relay served a thread the CLI never
opened; 5 added per-test outcomes (``verify_tests*``, ``oracle_tests*``) and
``expected_tests_digest``; 1–8 migrate on read."""


class Identity(Part):
    """Which cell the row is (written by ``cells.rows.identity``)."""

    SECTION: ClassVar[str] = "identity"
    schema_version: int = _f(f"version of this schema ({SCHEMA_VERSION})")
    task: str = _f("task id")
    task_class: str = _f("task class from the task file", alias="class")
    task_impossible: bool = _f(
        "the task is a cheating probe (`impossible: true`): its hidden oracle contradicts its prompt, "
        "so a resolved cell means the arm beat the judge, not the task; counted apart from the "
        "resolve rate (false in rows written before schema 8)"
    )
    arm: str = _f("arm name")
    run: int = _f("0-based repetition index")
    recorded_at: str = _f("UTC ISO time the row was built")


class Resolution(Part):
    """The outcome: the first failure kind and its cause (``cells.run``)."""

    SECTION: ClassVar[str] = "verdict"
    ok: bool = _f("every session finished cleanly with verified evidence")
    resolved: bool = _f("ok AND authored tests passed AND hidden oracle passed")
    # Lax on purpose: a stored row spells the kind as its string; only vocabulary values pass.
    error_kind: ErrorKind | None = _f(
        "first failure kind (see judging/outcomes.py / the report legend), null when none",
        default=None,
        strict=False,
    )
    error_detail: str | dict[str, Any] | None = _f(
        "redacted cause of error_kind: a string, or for session-error an object", default=None
    )


_SAME_FOUR = "as input_tokens"


class SessionLayer(Part):
    """What the arm's sessions measured and proved, summed over sessions (``cells.session_fold``).

    Kept on a row that failed after the sessions finished: what they spent was spent.
    """

    SECTION: ClassVar[str] = "sessions"
    input_tokens: int | None = _f(
        "sum over sessions of the main conversation's usage as the relay saw it served (the wire "
        "record: evidence of record; the CLI result's usage must equal it, else evidence-tampered); "
        "null if unknown",
        default=None,
    )
    cache_creation_input_tokens: int | None = _f(_SAME_FOUR, default=None)
    cache_read_input_tokens: int | None = _f(_SAME_FOUR, default=None)
    output_tokens: int | None = _f(_SAME_FOUR, default=None)
    cost_usd: Number | None = _f(
        "USD over every exchange the relay served (usage_wire's messages: main loop, subagents, "
        "retried-away replies, forks and threads the CLI never opened), each at the rates the "
        "CLI's result priced its model with (one of its bundled tables, found from modelUsage); "
        "null if any served exchange cannot be priced or nothing was served",
        default=None,
    )
    duration_s: Number | None = _f(
        "sum of the CLI's duration_ms / 1000 (process wall time when absent)", default=None
    )
    num_turns: int | None = _f("sum of the CLI's num_turns", default=None)
    usage_main_loop: Usage | None = _f(
        "{input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens}: the "
        "CLI result's usage summed over sessions (the four fields above): the main loop only",
        default=None,
    )
    usage_wire: Usage | None = _f(
        "same four fields over every message the relay saw served (main loop and subagents, each "
        "message id once, cut streams included): the provider's spend as the host observed it",
        default=None,
    )
    usage_transcripts: Usage | None = _f(
        "same four fields summed over every assistant message of the parent-captured streams, "
        "subagents included, deduplicated by message.id; null fields when the stream carried no "
        "real usage (through a LiteLLM gateway its per-message usage is all zeros). CLI 2.1.332 "
        "reports output_tokens from message_start, so against a real API output is a lower bound",
        default=None,
    )
    relay_forked_requests: int | None = _f(
        "requests that forked a conversation of the session beyond what the CLI's own retries "
        "produce (a reply continued a second way after a first continuation got its reply whole); "
        "any makes the cell evidence-tampered; their spend is in usage_wire and cost_usd",
        default=None,
    )
    relay_refused_requests: int | None = _f(
        "requests the model relay refused (another path, model or session, malformed or oversized, "
        "over the connection cap); never forwarded",
        default=None,
    )
    relay_upstream_retries: int | None = _f(
        "model requests whose first upstream attempt failed in transport on the provider side of "
        "the relay (connect refused, the connection reset or closed before any response byte) and "
        "that the relay retried once before any byte reached the CLI; a fault that outlived the "
        "retry is a session-error whose attribution names it",
        default=None,
    )
    sessions: int | None = _f("number of sessions that ran", default=None)
    session_ids: list[str] | None = _f("CLI session ids, in order", default=None)
    skill_invoked: bool | None = _f(
        "true: every expected skill proven invoked (the model requested Skill for it and a later "
        "request carried a non-error result, per the wire record); false: one was not; null: no skill",
        default=None,
    )
    skills_expected: list[str] | None = _f(
        "the skills the arm's sessions were told to invoke, in session order ([] for an arm without one)",
        default=None,
    )
    skills_invoked: list[str] | None = _f(
        "every skill the wire record proves invoked in any session (the model requested Skill for it "
        "and a later request carried a non-error result), sorted, each once; null when a session has "
        "no wire record",
        default=None,
    )
    transcript_missing: bool | None = _f(
        "a session's evidence could not be verified from its stream", default=None
    )
    evidence_diagnostics: list[str] | None = _f("why evidence was unverifiable, if it was", default=None)
    tool_use_counts: dict[str, int] | None = _f(
        "tool name → number of tool calls the model made across sessions (wire record); MCP tools "
        "count per tool under their full name mcp__<server>__<tool>",
        default=None,
    )
    plan_produced: bool | None = _f(
        "false only for a plan→work arm whose plan document was not accepted", default=None
    )
    plan_doc: str | None = _f("the accepted plan document (repo-relative), or null", default=None)
    skill_digest: str | None = _f(
        "fingerprint of the seeded skill files the sessions had to leave intact", default=None
    )
    variant_head_sha: str | None = _f("HEAD after skill seeding and setup: the diff base", default=None)
    cli_config_written: list[str] | None = _f(
        "Claude Code configuration the agent left in the workspace (any .claude/settings*.json, "
        ".claude.json, .mcp.json, managed-settings.json added or changed since the base), at most 50, "
        "sorted; no session read any of it (the CLI reads only the harness's settings: README "
        "Isolation); [] none; null when the sessions did not run or the workspace could not be scanned",
        default=None,
    )


class ProviderUsage(Part):
    """What the model side observed for this cell (``providers``: the ledger or the gateway log)."""

    SECTION: ClassVar[str] = "provider usage"
    usage_provider: Usage | None = _f(
        "same four fields as the model side observed them for this cell: the scripted provider's "
        "ledger (completed requests) or the LiteLLM gateway's usage log (successful requests, "
        "provider-native arithmetic); null when nothing observed the cell's requests",
        default=None,
    )
    usage_provider_source: Literal["scripted-ledger", "litellm-gateway"] | None = _f(
        "'scripted-ledger', 'litellm-gateway', or null: who observed usage_provider", default=None
    )


class Churn(Part):
    """The change's size, from the harness-owned patch view (``workspace.patch``)."""

    SECTION: ClassVar[str] = "churn"
    diff_files: int | None = _f(
        "files changed vs the starting commit (plan docs and skills excluded)", default=None
    )
    diff_insertions: int | None = _f("lines inserted (same exclusions)", default=None)
    diff_deletions: int | None = _f("lines deleted (same exclusions)", default=None)


def _flattened_metrics() -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``review_<metric>`` fields (annotations, field infos), one per ``ReviewMetrics`` field.

    Each metric's name, type and meaning are declared once, in ``review.ReviewMetrics``; the row
    stores them flattened too (reference §5), in its order, null when not scored. The type checker
    does not see the generated names: code reads them with ``Review.review_metric``.
    """
    annotations: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    for name, info in ReviewMetrics.model_fields.items():
        annotations[f"review_{name}"] = Optional[info.annotation]  # noqa: UP045 (a runtime type object)
        fields[f"review_{name}"] = _f(
            f"review_score.{name}: {info.description}; null when not scored", default=None
        )
    return annotations, fields


class Review(Part):
    """A review arm's artifact verdict and its score against the hidden labels (``review.score``).

    Beside ``review_score`` the row keeps each metric flattened as ``review_<metric>``: those
    fields are generated from ``review.ReviewMetrics``, where each metric is declared once.
    """

    SECTION: ClassVar[str] = "review"
    review_evidence_valid: bool | None = _f(
        "the artifact met the contract and the workspace was untouched", default=None
    )
    review_score: ReviewMetrics | None = _f(
        "the full score object (review arms with a valid artifact), or null", default=None
    )
    if not TYPE_CHECKING:  # the class namespace is a dict here: pydantic reads the generated fields
        __annotations__.update(_flattened_metrics()[0])
        locals().update(_flattened_metrics()[1])

    def review_metric(self, name: str) -> int | float | bool | None:
        """The row's ``review_<name>``; ``name`` is one of ``review.METRIC_NAMES`` (else ``KeyError``)."""
        if name not in ReviewMetrics.model_fields:
            raise KeyError(f"{name!r} is not a review metric; known: {', '.join(ReviewMetrics.model_fields)}")
        value: int | float | bool | None = getattr(self, f"review_{name}")
        return value

    @classmethod
    def scored(cls, score: ReviewScore | None, *, evidence_valid: bool) -> Review:
        """The review fields of a row; with no score (an invalid artifact) every metric is ``None``."""
        return cls.model_validate(review_row_fields(score, evidence_valid=evidence_valid))


class Provenance(Part):
    """What the cell ran on, against which commit, toolkit and bounds (``cells.rows``)."""

    SECTION: ClassVar[str] = "provenance"
    model: str | None = _f("model id the sessions ran on", default=None)
    benchmark_model: str | None = _f("same as model (reference compatibility)", default=None)
    effort: str | None = _f("Claude Code --effort level, or null for the CLI default", default=None)
    provider: str | None = _f(
        "'anthropic', 'openai' (through the LiteLLM gateway) or 'scripted' (a scripted row measures "
        "the pipeline, not a model)",
        default=None,
    )
    claude_code_version: str | None = _f("version of the Claude Code CLI that ran the sessions", default=None)
    sandbox_backend: str | None = _f(
        "'bwrap', or 'host-unsafe' for --unsafe-no-bwrap review sweeps", default=None
    )
    resource_limits: ResourceLimits | None = _f(
        "bounds the cell ran under: {memory_mib, pids, disk_mib, cpus, files, nofile_per_process, "
        "msgqueue_bytes, ptys, cell_uid, namespace_limits, seccomp_denied, sampled} (disk = room over "
        "the clone; cpus = CFS quota in cores; files = open descriptors of the whole cell; ptys = its "
        "devpts max; cell_uid = the unprivileged host uid its processes ran as, root runner only; "
        "namespace_limits = the /proc/sys/user limits of its user namespace; seccomp_denied = the "
        "syscalls refused); a bound is enforced by the kernel (cgroup, loop volume, devpts, uid: root; "
        "rlimits, user namespace, seccomp: any invoker) or, listed in sampled, by the host-side "
        "watchdog; null for a bound not enforced at all",
        default=None,
    )
    clone_kind: Literal["overlay", "copy"] | None = _f(
        "the cell's clone of its template: 'overlay' (the template as a read-only lower layer, the "
        "cell's writes in an upper layer, scanned alone) or 'copy' (a whole copy, walked); null "
        "when the cell never got a clone",
        default=None,
    )
    clone_reason: str | None = _f(
        "why the cell got that clone (root's idmapped overlay, a non-root runner's overlay in its "
        "user namespace, or what refused one); null with clone_kind",
        default=None,
    )
    task_ref: str | None = _f("the ref named in the task file", default=None)
    task_base_sha: str | None = _f("the immutable commit the ref resolved to", default=None)
    sanitized_task_sha: str | None = _f(
        "the parentless snapshot commit every clone of the task starts from", default=None
    )
    task_prompt_digest: str | None = _f("sha256 of the task prompt (canonical JSON)", default=None)
    task_binding_digest: str | None = _f("digest of the whole bound task definition", default=None)
    oracle_digest: str | None = _f("digest of the hidden oracle command and files", default=None)
    oracle_command_digest: str | None = _f("digest of the oracle command", default=None)
    oracle_manifest_digest: str | None = _f(
        "digest of the oracle file manifest (target, sha256, size)", default=None
    )
    expected_tests_digest: str | None = _f(
        "digest of the task's expected-tests lock entry that judged verify and the oracle (part of "
        "task_binding_digest); null when the task has no lock",
        default=None,
    )
    task_runtimes: list[RuntimeRecord] | None = _f(
        "the interpreters the task named (runtimes), each {name, version, digest}: the exact version "
        "provisioned and the digest of its whole tree; null when it named none (the sandbox's own /usr)",
        default=None,
    )
    ce_plugin_version: str | None = _f(
        "comparator plugin version (ce_* arms only), verified against its manifest", default=None
    )
    ce_plugin_manifest_digest: str | None = _f(
        "digest of the comparator plugin snapshot (ce_* arms only)", default=None
    )
    candidate_overlay_digest: str | None = _f(
        "digest of the candidate skill overlay (candidate_* arms only)", default=None
    )
    toolkit_name: str | None = _f("name from the evaluated toolkit's toolkit.yaml", default=None)
    toolkit_version: str | None = _f("version from toolkit.yaml", default=None)
    toolkit_digest: str | None = _f(
        "sha256 over toolkit.yaml and every file of its role skills; null for a toolkit built in code",
        default=None,
    )
    index_digest: str | None = _f(
        "digest of the code-graph index the cell got (reproducible: the toolkit's volatile index files "
        "count by name, its digest command's dump by its sorted lines); null when none",
        default=None,
    )
    mcp_servers: list[str] | None = _f(
        "names of the toolkit MCP servers in the sessions' strict --mcp-config ([] for baseline_nomcp)",
        default=None,
    )
    mcp_tools_granted: list[str] | None = _f(
        "the MCP tools the sessions were granted, as mcp__<server>__<tool> (the servers' read-only "
        "tools; [] when the arm gets no server): what tool_use_counts is read against",
        default=None,
    )


class DriverRecord(Part):
    """What the sweep driver adds: the cell's wall time, what it ran on, whether it was reused."""

    SECTION: ClassVar[str] = "driver"
    cell_wall_s: Number | None = _f(
        "wall time of the whole cell on its executor (workspace, sessions, verify, oracle, capture), s; "
        "what --order longest-first learns from",
        default=None,
    )
    runtime_digest: str | None = _f(
        "digest of what the cell ran on (CLI version, harness sources, sandbox backend, provider, script); "
        "--reuse-results requires it equal",
        default=None,
    )
    reused: bool | None = _f(
        "true when copied from --reuse-results instead of paid in this sweep", default=None
    )
    reused_from_dir: str | None = _f(
        "the --reuse-results directory a reused row came from; else null", default=None
    )
    reused_from_recorded_at: str | None = _f(
        "when a reused row was originally measured (its first recorded_at); else null", default=None
    )


class Artifacts(Part):
    """The files the row points at, written by the output directory beside it (``output.directory``)."""

    SECTION: ClassVar[str] = "artifacts"
    transcript_artifacts: list[TranscriptArtifact] | None = _f(
        "[{path, sha256, bytes, source}] of the redacted session streams", default=None
    )
    wire_artifacts: list[str] | None = _f(
        "per-session wire record files (one JSON line per exchange, no bodies)", default=None
    )
    patch_artifact: str | None = _f("file name of the final working-tree diff, or null", default=None)
    review_artifact: str | None = _f(
        "file name of the copied review artifact (review arms), or null", default=None
    )


class Regrade(Part):
    """What ``python -m workflow_bench.regrade`` adds to a row it re-judged (``regrade``)."""

    SECTION: ClassVar[str] = "regrade"
    regraded_from: str | None = _f(
        "where the judged patch came from: '<source sweep dir> <task>/<arm>/<run>' for a regraded "
        "sweep, '<predictions file>:<line>' for a predictions file; null for a row a sweep measured",
        default=None,
    )
    regrade_before: RegradeBefore | None = _f(
        "the source row's {resolved, oracle_passed, authored_tests_passed, error_kind, oracle_digest, "
        "verify_digest, expected_tests_digest}; this row's oracle_digest, expected_tests_digest and "
        "regrade_verify_digest are the task it was re-judged under; null when not regraded or no source row",
        default=None,
    )
    regrade_verify_digest: str | None = _f(
        "digest of the verify command the regrade judged with; null when not regraded", default=None
    )
    regrade_change: str | None = _f(
        "why the verdict changed ('resolved true -> false: ...'); null when it did not or not regraded",
        default=None,
    )


# The parts in documentation order; ``Row`` is exactly their fields.
PARTS: tuple[type[Part], ...] = (
    Identity,
    Resolution,
    VerifyJudgement,
    OracleJudgement,
    SessionLayer,
    ProviderUsage,
    Churn,
    Review,
    Provenance,
    DriverRecord,
    Artifacts,
    CleanRoomJudgement,
    Regrade,
)


class Row(
    Regrade,
    CleanRoomJudgement,
    Artifacts,
    DriverRecord,
    Provenance,
    Review,
    Churn,
    ProviderUsage,
    SessionLayer,
    OracleJudgement,
    VerifyJudgement,
    Resolution,
    Identity,
):
    """One cell's row in results.jsonl: every part's fields, each declared once in its part."""

    SECTION: ClassVar[str] = "row"

    @property
    def key(self) -> CellKey:
        """The cell this row is the result of."""
        return CellKey(task_id=self.task, run=self.run, arm=self.arm)

    def to_json_obj(self) -> dict[str, Any]:
        """The row as stored: JSON values keyed by the stored names (``class``, not ``task_class``)."""
        return self.model_dump(mode="json", by_alias=True)

    def replace(self, **changes: Any) -> Row:
        """A copy with ``changes`` (field names), validated like a new row."""
        return Row.model_validate({**self.model_dump(by_alias=False), **changes})


def assemble(*parts: Part) -> Row:
    """The row of the given parts; a field two parts both set is a bug (``ValueError``)."""
    merged: dict[str, Any] = {}
    for part in parts:
        values = {name: getattr(part, name) for name in part.model_fields_set | _required(type(part))}
        clash = sorted(set(values) & set(merged))
        if clash:
            raise ValueError(f"row fields set twice: {clash}")
        merged.update(values)
    return Row.model_validate(merged)


def _required(part: type[Part]) -> set[str]:
    return {name for name, info in part.model_fields.items() if info.is_required()}


def stored_names() -> tuple[str, ...]:
    """Every field of a stored row, by its stored name, in documentation order."""
    return tuple(info.alias or name for part in PARTS for name, info in part.model_fields.items())
