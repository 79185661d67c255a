"""A cell's repository on the host: clones and templates, bounded snapshots, the patch view, cell
paths, and the one hardened git every harness git command goes through (``git``).

Modules: ``git`` (hardened config and scrubbed environment for every git invocation, no automatic
gc, scaled time bounds), ``clone`` (packed templates, per-cell copies), ``remove`` (deep-safe
in-process removal), ``snapshot`` (bounded workspace scans that read only changed files, skill
fingerprints), ``baseline`` (a template's state and patch base, recorded once), ``patch`` (patch
and churn from a harness-owned git directory), ``paths`` (fixed-length cell dirs under a
pid-named work root, the patch view beside each, AF_UNIX bounds, stale-root collection).
"""
