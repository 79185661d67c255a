"""A cell's repository on the host: clones and templates, bounded snapshots, the patch view, cell
paths, and the one hardened git every harness git command goes through (``git``).

Modules: ``git`` (hardened config and scrubbed environment for every git invocation), ``clone``
(templates, clones, deep-safe removal), ``snapshot`` (bounded workspace snapshots, skill
fingerprints), ``patch`` (patch and churn from a harness-owned git directory), ``paths``
(fixed-length cell dirs under a pid-named work root, AF_UNIX bounds, stale-root collection).
"""
