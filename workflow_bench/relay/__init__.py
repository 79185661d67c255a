"""The host-side model relay: the sandbox's only way to the model; it injects the cell key.

Modules: ``server`` (ModelRelay).
"""
