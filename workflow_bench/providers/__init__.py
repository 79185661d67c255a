"""Model providers: the scripted provider, the LiteLLM gateway, and per-sweep connection setup.

Subpackages: ``scripted`` (the offline scripted model server), ``gateway`` (the supervised LiteLLM
proxy and usage arithmetic). Modules: ``connect`` (starting them for a sweep, per-cell usage
observation), ``access`` (ModelAccess, per-cell keys and credentials).
"""
