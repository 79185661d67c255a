"""``python -m workflow_bench.view DIR``: a sweep's cell viewer over a read-only loopback server.

Entry point only (``server``); the viewer itself is ``reports.viewer``. Above ``reports``.
"""
