"""The task command (`python -m workflow_bench.tasks`): self-check, scripted agents, dependency trees.

Modules: ``check`` (``tasks check``: base fails, reference patch passes, repeats agree), ``agents``
(the oracle/no-op agent scripts), ``deps`` (a pinned ``sandbox_dependencies`` tree), ``__main__``
(the command). The task definitions themselves (schema, specs, bindings, repositories, hidden
oracles) live in ``taskspec/``, below every package that runs cells: this package runs cells and
judges, so it sits above them.
"""
