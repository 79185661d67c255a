"""Task specs: the task-file schema, bindings (ref → SHA), repository access and hidden-oracle snapshots.

Modules: ``spec`` (TaskSpec, TaskBinding, load/select/bind), ``schema`` (task-file YAML validation),
``repos`` (git and bundle access), ``oracles`` (immutable oracle snapshots, staging, re-verification).
"""
