"""Task definitions: the task-file schema, specs, bindings (ref → SHA), repository access and hidden oracles.

Modules: ``schema`` (``TaskSpec``, the one declaration of every task-file key, and the loader),
``oracle_spec`` (the ``oracle`` key's parts and the path rules), ``spec`` (TaskBinding,
load/select/bind; the import path for the layer), ``repos`` (git and bundle access), ``oracles``
(immutable oracle snapshots), ``oracle_staging`` (staging into a cell and re-verification),
``index_guard`` (a committed code-graph index is refused). The task command that runs these
(``tasks check``) lives in ``tasks/``, above the cells.
"""
