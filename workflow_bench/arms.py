"""Arms as data: which sessions a cell runs, with which prompt, skill and tools.

An arm is a recipe, not code: ``ArmSpec`` lists its sessions, and the cell
runs them in order. The toolkit decides which skill name plays "plan" and
"work"; the arm names the role. Every built-in arm lives in ``ARMS`` and
``resolve_arm`` is the only lookup, so a typo fails at argument parsing with
the known names listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Phase = Literal["plan", "work"]
SkillRole = Literal["plan", "work", "review"]

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

# Built-in tools every implementation session may use. Passed as both --tools
# (restricts the set) and --allowedTools (pre-approves under dontAsk).
AGENT_TOOLS = ("Read", "Grep", "Glob", "Edit", "Write", "Bash", "Skill")


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


@dataclass(frozen=True, slots=True)
class ArmSpec:
    """A named recipe of sessions. ``implementation`` arms must change non-plan files to resolve."""

    name: str
    sessions: tuple[SessionSpec, ...]
    implementation: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        if not self.sessions:
            raise ValueError(f"arm {self.name!r} has no sessions")
        phases = [s.phase for s in self.sessions]
        if "plan" in phases and phases != ["plan", "work"]:
            raise ValueError(
                f"arm {self.name!r}: a plan session must be followed by exactly one work session"
            )

    @property
    def plans_first(self) -> bool:
        return self.sessions[0].phase == "plan"

    @property
    def skill_roles(self) -> tuple[SkillRole, ...]:
        return tuple(s.skill_role for s in self.sessions if s.skill_role is not None)


BUILTIN_ARMS = (
    ArmSpec(
        name="workflow",
        description="plan skill writes one plan document, then the work skill executes it",
        sessions=(
            SessionSpec(phase="plan", prompt=PLAN_PROMPT, skill_role="plan"),
            SessionSpec(phase="work", prompt=WORK_PROMPT, skill_role="work"),
        ),
    ),
    ArmSpec(
        name="workflow_direct",
        description="the work skill in direct mode, no planning pass",
        sessions=(SessionSpec(phase="work", prompt=WORK_DIRECT_PROMPT, skill_role="work"),),
    ),
    ArmSpec(
        name="baseline",
        description="a plain agent with the same tools; the Skill tool is disallowed",
        sessions=(
            SessionSpec(
                phase="work",
                prompt=BASELINE_PROMPT,
                skill_role=None,
                tools=tuple(t for t in AGENT_TOOLS if t != "Skill"),
                disallowed_tools=("Skill",),
            ),
        ),
    ),
)

ARMS: Mapping[str, ArmSpec] = MappingProxyType({arm.name: arm for arm in BUILTIN_ARMS})
DEFAULT_ARMS = ("workflow", "workflow_direct", "baseline")


class UnknownArmError(ValueError):
    pass


def resolve_arm(name: str) -> ArmSpec:
    if name not in ARMS:
        raise UnknownArmError(f"unknown arm {name!r}; known arms: {', '.join(ARMS)}")
    return ARMS[name]


@dataclass(frozen=True, slots=True)
class Toolkit:
    """Which skill directory plays each role. Skills live at ``<root>/skills/<name>/SKILL.md``."""

    root: str
    roles: Mapping[SkillRole, str]

    def skill_for(self, role: SkillRole) -> str:
        return self.roles[role]

    @property
    def skill_names(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.roles.values())))
