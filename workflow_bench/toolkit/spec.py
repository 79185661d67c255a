"""The evaluated toolkit as data: which skill directory plays each role (plan, work, review).

Public surface: ``SkillRole`` and ``Toolkit``. Pure data: reads no files; the runner builds the
``Toolkit`` from ``--toolkit`` and every layer below receives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

SkillRole = Literal["plan", "work", "review"]


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

    def role_of(self, skill_name: str) -> SkillRole | None:
        return next((role for role, name in self.roles.items() if name == skill_name), None)
