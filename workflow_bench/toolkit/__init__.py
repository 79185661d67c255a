"""The evaluated toolkit: which skills play which role, candidate overlays, the comparator plugin.

Modules: ``spec`` (Toolkit, SkillRole), ``overlay`` (candidate skill overlays), ``comparator`` (the
external comparator plugin: version check, read-only snapshot, digest).
"""
