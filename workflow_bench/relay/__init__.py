"""The host-side model relay: the sandbox's only way to the model; it injects the cell key.

Modules: ``server`` (ModelRelay: what it accepts, forwards and records), ``wire`` (the parser of
requests and responses into the facts the wire record keeps).
"""
