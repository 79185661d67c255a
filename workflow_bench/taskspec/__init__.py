"""Task definitions: the task-file schema, specs, bindings (ref → SHA), repository access and hidden oracles.

Modules: ``spec`` (TaskSpec, TaskBinding, load/select/bind), ``schema`` (task-file YAML validation),
``repos`` (git and bundle access), ``oracles`` (immutable oracle snapshots), ``oracle_staging``
(staging into a cell and re-verification), ``index_guard`` (a committed code-graph index is refused).
The task command that runs these (``tasks check``) lives in ``tasks/``, above the cells.
"""
