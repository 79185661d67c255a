"""Arms as data: which sessions a cell runs, with which prompt, skill, tools and boundary.

An arm is a recipe, not code: ``ArmSpec`` lists its sessions and the cell
runs them in order. A session names a skill *role* (plan, work, review); the
arm's ``family`` says who provides it: the evaluated toolkit, or the external
comparator plugin (the ``ce_*`` arms). Candidate arms execute exactly as their
incumbent, after the candidate overlay is committed into the clone.

``ARMS`` is built once at import; ``resolve_arm`` is the only lookup, so a
typo fails at argument parsing with the known names listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from workflow_bench.review.contract import REVIEW_OUTPUT_CONTRACT
from workflow_bench.toolkit.overlay import Overlay, OverlayError, load_overlay
from workflow_bench.toolkit.spec import SkillRole, Toolkit

Phase = Literal["plan", "work", "review"]
Family = Literal["toolkit", "comparator", "none"]

# Appended to every work prompt. A headless `claude -p` session has no later
# turn: a session that backgrounds its tests or "waits" for a wakeup reports
# done unverified (observed in the reference harness's paid runs).
HEADLESS_VERIFY = (
    " Verification must be observed inside this session: run the test commands in the foreground "
    "to completion and report their actual output; never background them or wait for later."
)
PLAN_PROMPT = (
    "Use the {skill} skill for: {task}\n"
    "Headless run: make reasonable choices without asking; the plan document is the deliverable."
)
WORK_PROMPT = (
    "Use the {skill} skill to execute the plan at {plan}.\n"
    "Headless run: proceed without asking; report Definition of Done status at the end." + HEADLESS_VERIFY
)
WORK_DIRECT_PROMPT = (
    "Use the {skill} skill for: {task}\n"
    "Headless run: proceed without asking. The user explicitly declines a separate planning pass: "
    "execute in direct mode with the skill's execution discipline." + HEADLESS_VERIFY
)
BASELINE_PROMPT = (
    "{task}\n\n"
    "Implement the change in this repository and verify it by running the relevant tests. "
    "Work autonomously without asking questions."
)
NO_TOOLKIT_NOTE = (
    "\n\nNo skills, plugins or slash commands are available in this session; work with the "
    "built-in tools only."
)
REVIEW_PROMPT = (
    "Use the {skill} skill to review the local uncommitted changes in this repository. {task}\n"
    "Headless run: proceed without asking; do not post to GitHub or anywhere external. "
    + REVIEW_OUTPUT_CONTRACT
)
# Comparator prompts keep the toolkit prompts' structure so only the skill family differs.
COMPARATOR_NOTE = " (comparator plugin)"

# Built-in tools. Every list is passed as both --tools (restricts the set) and
# --allowedTools (pre-approves under dontAsk). Agent is included for every arm
# alike: subagents are how real sessions spend tokens the main loop's usage
# never shows, and a benchmark that forbade them would hide exactly that spend.
AGENT_TOOLS = ("Read", "Grep", "Glob", "Edit", "Write", "Bash", "Skill", "Agent")
NO_SKILL_TOOLS = tuple(t for t in AGENT_TOOLS if t != "Skill")
# Review may not edit the repository; Write stays for the artifact outside it.
REVIEW_TOOLS = tuple(t for t in AGENT_TOOLS if t != "Edit")


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """One CLI session of an arm."""

    phase: Phase
    prompt: str
    skill_role: SkillRole | None
    tools: tuple[str, ...] = AGENT_TOOLS
    disallowed_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if "{task}" not in self.prompt and "{plan}" not in self.prompt:
            raise ValueError(f"session prompt must reference {{task}} or {{plan}}: {self.prompt[:60]!r}")
        if self.skill_role is None and "Skill" in self.tools and "Skill" not in self.disallowed_tools:
            raise ValueError("a session with no expected skill must not be able to invoke skills")
        if self.phase == "review" and "Edit" in self.tools:
            raise ValueError("a review session must not have the Edit tool")


@dataclass(frozen=True, slots=True)
class ArmSpec:
    """A named recipe of sessions.

    ``implementation``: must change non-plan files to resolve. ``review``: one
    review session over a read-only workspace, judged against hidden labels.
    ``candidate_of``: the incumbent this candidate arm executes as.
    ``hide_skills``: the seeded skills are masked and slash commands disabled.
    ``mcp``: the sessions get the toolkit's MCP servers (its read-only tools only).
    """

    name: str
    sessions: tuple[SessionSpec, ...]
    family: Family = "toolkit"
    candidate_of: str | None = None
    hide_skills: bool = False
    mcp: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        if not self.sessions:
            raise ValueError(f"arm {self.name!r} has no sessions")
        phases = [s.phase for s in self.sessions]
        if "plan" in phases and phases != ["plan", "work"]:
            raise ValueError(
                f"arm {self.name!r}: a plan session must be followed by exactly one work session"
            )
        if "review" in phases and phases != ["review"]:
            raise ValueError(f"arm {self.name!r}: a review arm runs exactly one review session")
        has_skill = any(s.skill_role for s in self.sessions)
        if has_skill == (self.family == "none"):
            raise ValueError(f"arm {self.name!r}: family {self.family!r} does not match its skill roles")

    @property
    def plans_first(self) -> bool:
        return self.sessions[0].phase == "plan"

    @property
    def review(self) -> bool:
        return self.sessions[0].phase == "review"

    @property
    def implementation(self) -> bool:
        return not self.review

    @property
    def skill_roles(self) -> tuple[SkillRole, ...]:
        return tuple(s.skill_role for s in self.sessions if s.skill_role is not None)


WORKFLOW_SESSIONS = (
    SessionSpec(phase="plan", prompt=PLAN_PROMPT, skill_role="plan"),
    SessionSpec(phase="work", prompt=WORK_PROMPT, skill_role="work"),
)
DIRECT_SESSIONS = (SessionSpec(phase="work", prompt=WORK_DIRECT_PROMPT, skill_role="work"),)
REVIEW_SESSIONS = (
    SessionSpec(phase="review", prompt=REVIEW_PROMPT, skill_role="review", tools=REVIEW_TOOLS),
)


def _skill_arm(name: str, family: Family, description: str, sessions: tuple[SessionSpec, ...]) -> ArmSpec:
    """A skill arm; comparator arms name the plugin in their prompts, nothing else differs."""
    if family == "comparator":
        note = "{skill} skill" + COMPARATOR_NOTE
        sessions = tuple(replace(s, prompt=s.prompt.replace("{skill} skill", note, 1)) for s in sessions)
    return ArmSpec(name=name, family=family, description=description, sessions=sessions)


INCUMBENT_ARMS = (
    _skill_arm(
        "workflow", "toolkit", "plan skill writes one plan document, work executes it", WORKFLOW_SESSIONS
    ),
    _skill_arm(
        "workflow_direct", "toolkit", "the work skill in direct mode, no planning pass", DIRECT_SESSIONS
    ),
    _skill_arm(
        "review", "toolkit", "the review skill on an uncommitted change; labels judge", REVIEW_SESSIONS
    ),
    _skill_arm(
        "ce_workflow", "comparator", "the comparator plugin's plan then work skills", WORKFLOW_SESSIONS
    ),
    _skill_arm(
        "ce_workflow_direct", "comparator", "the comparator's work skill, direct mode", DIRECT_SESSIONS
    ),
    _skill_arm("ce_review", "comparator", "the comparator's review skill; labels judge", REVIEW_SESSIONS),
    ArmSpec(
        name="baseline",
        family="none",
        description="a plain agent with the same tools and repository; the Skill tool is disallowed",
        sessions=(
            SessionSpec(
                phase="work",
                prompt=BASELINE_PROMPT,
                skill_role=None,
                tools=NO_SKILL_TOOLS,
                disallowed_tools=("Skill",),
            ),
        ),
    ),
    ArmSpec(
        name="baseline_nomcp",
        family="none",
        hide_skills=True,
        mcp=False,
        description="no skills, no MCP servers, no plugins, slash commands off: the bare agent",
        sessions=(
            SessionSpec(
                phase="work",
                prompt=BASELINE_PROMPT + NO_TOOLKIT_NOTE,
                skill_role=None,
                tools=NO_SKILL_TOOLS,
                disallowed_tools=("Skill",),
            ),
        ),
    ),
)
# candidate arm -> the incumbent it executes as (after the overlay commit).
CANDIDATE_OF: Mapping[str, str] = MappingProxyType(
    {
        "candidate_workflow": "workflow",
        "candidate_workflow_direct": "workflow_direct",
        "candidate_review": "review",
    }
)


def _candidate(name: str, incumbent: ArmSpec) -> ArmSpec:
    return ArmSpec(
        name=name,
        sessions=incumbent.sessions,
        family=incumbent.family,
        candidate_of=incumbent.name,
        mcp=incumbent.mcp,
        description=f"{incumbent.name} with the candidate skill overlay committed into the clone",
    )


_BY_NAME = {arm.name: arm for arm in INCUMBENT_ARMS}
BUILTIN_ARMS = (*INCUMBENT_ARMS, *(_candidate(n, _BY_NAME[i]) for n, i in CANDIDATE_OF.items()))
ARMS: Mapping[str, ArmSpec] = MappingProxyType({arm.name: arm for arm in BUILTIN_ARMS})
DEFAULT_ARMS = ("workflow", "workflow_direct", "baseline")
COMPARATOR_ARMS = frozenset(a.name for a in BUILTIN_ARMS if a.family == "comparator")
REVIEW_ARMS = frozenset(a.name for a in BUILTIN_ARMS if a.review)
# Which arms an overlay touching a skill role must run, in order (reference required_candidate_arms).
REQUIRED_ARMS_BY_ROLE: Mapping[SkillRole, tuple[str, ...]] = MappingProxyType(
    {
        "plan": ("workflow", "candidate_workflow"),
        "work": ("workflow", "candidate_workflow", "workflow_direct", "candidate_workflow_direct"),
        "review": ("ce_review", "review", "candidate_review"),
    }
)


class UnknownArmError(ValueError):
    pass


def resolve_arm(name: str) -> ArmSpec:
    if name not in ARMS:
        raise UnknownArmError(f"unknown arm {name!r}; known arms: {', '.join(ARMS)}")
    return ARMS[name]


def required_candidate_arms(roles: set[SkillRole] | frozenset[SkillRole]) -> tuple[str, ...]:
    """The exact, ordered arm list a candidate overlay touching ``roles`` must run."""
    ordered: list[str] = []
    for role in ("plan", "work", "review"):
        if role in roles:
            ordered += [a for a in REQUIRED_ARMS_BY_ROLE[role] if a not in ordered]
    return tuple(ordered)


CANDIDATE_ORIGINS = ("manual-initial-overlay", "model-proposer")


def candidate_overlay(
    root: Path | None, *, arms: Sequence[str], toolkit: Toolkit, origin: str | None = None
) -> Overlay | None:
    """Load ``--candidate-overlay`` and enforce the candidate-arm rules (reference main()).

    Candidate arms need an overlay; an overlay needs exactly the arms its skill roles imply,
    each candidate paired with its incumbent, in that order.
    """
    candidates = [a for a in arms if ARMS[a].candidate_of]
    if origin is not None and (root is None or origin not in CANDIDATE_ORIGINS):
        raise OverlayError(
            f"--candidate-origin {origin}: needs --candidate-overlay and one of "
            f"{', '.join(CANDIDATE_ORIGINS)}"
        )
    if root is None:
        if candidates:
            raise OverlayError(f"arm(s) {' '.join(candidates)} need --candidate-overlay")
        return None
    if not candidates:
        raise OverlayError("--candidate-overlay needs the candidate arms it is evaluated on (candidate_*)")
    overlay = load_overlay(root, toolkit=toolkit)
    required = required_candidate_arms(overlay.roles)
    if tuple(arms) != required:
        raise OverlayError(
            f"--candidate-overlay touches skill role(s) {', '.join(sorted(overlay.roles))}: --arms must be "
            f"exactly {' '.join(required)} (each candidate paired with its incumbent), "
            f"got {' '.join(arms)}"
        )
    return overlay if origin is None else replace(overlay, origin=origin)
