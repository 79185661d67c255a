"""Transcript usage (dedup, placeholders, subagents), the accounting fold, and its report section."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.builders import row
from workflow_bench.cells.session_fold import sum_sessions
from workflow_bench.cells.stream_usage import transcript_usage
from workflow_bench.reports.accounting import row_flags, usage_accounting
from workflow_bench.reports.markdown import render_markdown
from workflow_bench.reports.provenance import ReportProvenance
from workflow_bench.usage import USAGE_FIELDS

pytestmark = pytest.mark.unit


def _u(i, cc, cr, o):
    return {
        "input_tokens": i,
        "cache_creation_input_tokens": cc,
        "cache_read_input_tokens": cr,
        "output_tokens": o,
    }


def _assistant(message_id, usage, *, blocks=("text",), parent=None, model="m"):
    return {
        "type": "assistant",
        "parent_tool_use_id": parent,
        "message": {
            "id": message_id,
            "model": model,
            "usage": usage,
            "content": [{"type": b} for b in blocks],
        },
    }


def test_events_sharing_a_message_id_count_once() -> None:
    events = [
        _assistant("m1", _u(10, 1, 2, 3), blocks=("text",)),
        _assistant("m1", _u(10, 1, 2, 3), blocks=("tool_use",)),
        _assistant("m2", _u(20, 0, 5, 4)),
    ]
    assert transcript_usage(events) == _u(30, 1, 7, 7)
    # Negative control: counting events instead of messages would double m1.
    assert sum(e["message"]["usage"]["input_tokens"] for e in events) == 40


def test_subagent_messages_count_and_an_agent_result_adds_its_final_message() -> None:
    agent_result = {
        "type": "user",
        "tool_use_result": {"status": "completed", "usage": _u(2000, 30, 40, 200)},
        "message": {"content": [{"type": "tool_result", "tool_use_id": "call1"}]},
    }
    events = [
        _assistant("m1", _u(100, 1, 2, 10), blocks=("text", "tool_use")),
        _assistant("s1", _u(1000, 10, 20, 100), blocks=("tool_use",), parent="call1"),
        agent_result,
        _assistant("m2", _u(200, 3, 4, 20)),
    ]
    assert transcript_usage(events) == _u(3300, 44, 66, 330)
    # When the stream did show that final message (background agents), it is not counted twice.
    shown = [*events[:2], _assistant("s2", _u(2000, 30, 40, 200), parent="call1"), *events[2:]]
    assert transcript_usage(shown) == _u(3300, 44, 66, 330)


def test_placeholder_and_missing_usage_is_unknown_not_zero() -> None:
    # Through LiteLLM every message_start is zeros: no usage was reported at all.
    assert set(transcript_usage([_assistant("m1", _u(0, 0, 0, 0))]).values()) == {None}
    assert set(transcript_usage([]).values()) == {None}
    assert set(transcript_usage([_assistant(None, _u(1, 0, 0, 1))]).values()) == {None}
    partial = transcript_usage([_assistant("m1", {"input_tokens": 5, "output_tokens": 1})])
    assert set(partial.values()) == {None}  # cache fields absent: the input side is not known


def test_synthetic_error_messages_are_skipped() -> None:
    events = [_assistant("m1", _u(5, 0, 0, 1)), _assistant("e1", _u(0, 0, 0, 0), model="<synthetic>")]
    assert transcript_usage(events) == _u(5, 0, 0, 1)


def _outcome(main, seen):
    from workflow_bench.cells.sessions import SessionOutcome

    return SessionOutcome(
        ok=True,
        error_kind=None,
        error_detail=None,
        usage=main,
        cost_usd=0.1,
        duration_s=1.0,
        num_turns=1,
        session_id="s",
        skill_invoked=None,
        transcript_missing=False,
        tool_use_counts={},
        transcript=b"",
        transcript_usage=seen,
    )


def test_sum_sessions_reports_both_figures() -> None:
    layer, _ = sum_sessions(
        [_outcome(_u(1, 2, 3, 4), _u(10, 2, 3, 40)), _outcome(_u(1, 0, 0, 1), _u(1, 0, 0, 1))]
    )
    assert layer.usage_main_loop is not None and layer.usage_transcripts is not None
    assert (
        layer.usage_main_loop.model_dump() == _u(2, 2, 3, 5) == {f: getattr(layer, f) for f in USAGE_FIELDS}
    )
    assert layer.usage_transcripts.model_dump() == _u(11, 2, 3, 41)
    unknown, _ = sum_sessions([_outcome(_u(1, 2, 3, 4), dict.fromkeys(USAGE_FIELDS))])
    assert unknown.usage_transcripts is not None
    assert set(unknown.usage_transcripts.model_dump().values()) == {None}


MAIN, SERVED = _u(300, 4, 6, 30), _u(3300, 44, 66, 330)


def _row(arm="a", main=MAIN, seen=SERVED, provider=SERVED):
    return row(task="t", arm=arm, usage_main_loop=main, usage_transcripts=seen, usage_provider=provider)


def test_row_flags_name_every_disagreement() -> None:
    assert row_flags(_row()) == [
        "main loop < transcripts (subagent spend)",
        "main loop < provider (subagent spend)",
    ]
    assert row_flags(_row(seen=_u(1300, 14, 26, 130))) == [
        "main loop < transcripts (subagent spend)",
        "main loop < provider (subagent spend)",
        "transcripts < provider (the stream omits messages)",
    ]
    # Negative control: three equal figures raise nothing; an unknown figure is not a disagreement.
    same = _u(1, 2, 3, 4)
    assert row_flags(_row(main=same, seen=same, provider=same)) == []
    assert row_flags(_row(main=same, seen=dict.fromkeys(USAGE_FIELDS), provider=None)) == []
    assert row_flags(_row(main=_u(5, 0, 0, 1), seen=_u(4, 0, 0, 2), provider=None)) == [
        "main loop ≠ transcripts"
    ]


def test_accounting_sums_every_run_and_keeps_unknown() -> None:
    lines = usage_accounting([_row(), _row(), _row(arm="b", provider=None)])
    first, second = lines
    assert (first.arm, first.runs) == ("a", 2)
    assert first.main_loop.input_tokens == 600 and first.provider.output_tokens == 660
    assert first.flags == (
        "main loop < transcripts (subagent spend) ×2",
        "main loop < provider (subagent spend) ×2",
    )
    assert second.provider is None
    mixed = usage_accounting([_row(), _row(seen=dict.fromkeys(USAGE_FIELDS))])[0]
    assert mixed.transcripts.input_tokens is None


def test_a_sign_holds_when_every_known_field_agrees_with_it() -> None:
    # "<" means no field is larger (some may be equal); ">" the mirror; mixed is "≠".
    partly_equal = _u(300, 44, 6, 330)
    assert row_flags(_row(main=MAIN, seen=partly_equal, provider=None)) == [
        "main loop < transcripts (subagent spend)"
    ]
    assert row_flags(_row(main=partly_equal, seen=MAIN, provider=None)) == ["main loop > transcripts"]
    assert row_flags(_row(main=SERVED, seen=MAIN, provider=MAIN)) == [
        "main loop > transcripts",
        "main loop > provider",
    ]


def test_fields_only_one_figure_knows_are_not_compared() -> None:
    main = {**_u(5, 0, 0, 1), "output_tokens": None}
    assert row_flags(_row(main=main, seen=_u(5, 0, 0, 99), provider=None)) == []


def test_a_missing_middle_figure_does_not_hide_the_outer_pair() -> None:
    assert row_flags(_row(seen=None)) == ["main loop < provider (subagent spend)"]


def test_a_value_that_is_not_an_int_is_never_recorded() -> None:
    # The row model is strict: a flag, a fraction or a string is not a token count.
    for bad in (True, 1.5, "3"):
        with pytest.raises(ValueError, match="input_tokens"):
            _row(main={**MAIN, "input_tokens": bad})
    # and an unknown field is not a disagreement
    assert row_flags(_row(main={**SERVED, "input_tokens": None}, seen=SERVED, provider=SERVED)) == []


def test_a_group_mixing_rows_with_and_without_a_figure_sums_to_unknown() -> None:
    # One run the provider never observed: the provider's total for the group is not known.
    line = usage_accounting([_row(), _row(provider=None)])[0]
    assert line.provider is not None and line.provider.values() == (None, None, None, None)
    assert line.main_loop.input_tokens == 600
    assert usage_accounting([_row(provider=None), _row(provider=None)])[0].provider is None
    neither = usage_accounting([_row(main=None, seen=None, provider=None)])[0]
    assert neither.main_loop.values() == neither.transcripts.values() == (None, None, None, None)


def test_report_shows_three_figures_and_says_the_main_loop_is_partial() -> None:
    now = datetime.now(UTC)
    provenance = ReportProvenance(
        model="m", effort=None, provider="scripted", claude_code_version="2.1.332", selected_tasks=["t"],
        skipped_expensive=[], runs=1, arms=["a"], started_at=now, finished_at=now, wall_s=1.0,
        status="complete",
    )  # fmt: skip
    text = render_markdown({}, provenance=provenance, accounting=usage_accounting([_row()]))
    assert (
        "## Token accounting" in text and "| t | a | 1 | 300 / 4 / 6 / 30 | 3,300 / 44 / 66 / 330 |" in text
    )
    assert "**The main-loop figure is partial for 1 task×arm(s)** (t×a)" in text
    same = _u(1, 2, 3, 4)
    quiet = render_markdown(
        {}, provenance=provenance, accounting=usage_accounting([_row(main=same, seen=same, provider=same)])
    )
    assert "partial" not in quiet and "| — |" in quiet


def test_sum_sessions_folds_the_skills_each_session_proved_invoked() -> None:
    from dataclasses import replace

    plan, work = replace(_outcome(_u(1, 0, 0, 1), _u(1, 0, 0, 1)), skills_invoked=("plan",)), None
    work = replace(plan, skills_invoked=("plan", "work"))
    layer, _ = sum_sessions([plan, work], skills_expected=["plan", "work"])
    assert layer.skills_expected == ["plan", "work"] and layer.skills_invoked == ["plan", "work"]
    # A session without a wire record makes the union unknown, never a shorter list.
    unknown, _ = sum_sessions([plan, replace(work, skills_invoked=None)], skills_expected=["plan", "work"])
    assert unknown.skills_invoked is None
    none, _ = sum_sessions([], skills_expected=[])
    assert none.skills_invoked is None and none.skills_expected == []
