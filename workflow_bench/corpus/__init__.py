"""The embedded demo corpus: target project, toolkit skills, hidden oracles and model scripts.

Data, not code, apart from ``build_target`` (the deterministic bundle builder) and
``graph_demo`` (derives ``scripts/graph-demo.yaml`` from ``scripts/demo.yaml``).
Nothing here is imported by the sweep; task files and the toolkit option point
at these paths.
"""
