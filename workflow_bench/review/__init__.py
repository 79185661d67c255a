"""Review tasks: the artifact contract the agent must write, hidden labels, deterministic scoring.

Modules: ``contract`` (artifact contract and parser), ``labels`` (hidden label files), ``score``
(matching findings to labels; the one import path for review callers).
"""
