"""The evaluated toolkit as data: which skill directory plays each role (plan, work, review).

Public surface: ``SkillRole``, ``Toolkit`` and ``load_toolkit`` (the ``--toolkit`` directory,
checked to hold a SKILL.md for every role; ``ToolkitError`` names the missing one). The runner
builds the ``Toolkit`` once and every layer below receives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
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


class ToolkitError(ValueError):
    """A toolkit directory that lacks a skill some role needs: exit 2, nothing run."""


def load_toolkit(root: Path) -> Toolkit:
    """The toolkit at ``root``: each role is played by the skill of the same name."""
    roles: dict[SkillRole, str] = {"plan": "plan", "work": "work", "review": "review"}
    for name in roles.values():
        if not (root / "skills" / name / "SKILL.md").is_file():
            raise ToolkitError(f"--toolkit {root}: missing skills/{name}/SKILL.md")
    return Toolkit(root=str(root.resolve()), roles=roles)
