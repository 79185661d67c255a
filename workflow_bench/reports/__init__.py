"""Reports: everything computed from `results.jsonl` after the cells ran.

Health, promotion (gate, verify, apply), paired statistics and the md/html renderers. Pure
functions over rows plus the sweep record; only the sweep driver and the re-render entry point
write files.
"""
