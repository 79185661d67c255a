"""Finds the test framework changed under the kit's Python adapters (unittest shim, pytest adapter).

The code under test runs in the process that runs the oracle; the observed forgery replaced
``unittest.TestCase.run`` from a package ``__init__`` so that tests it did not recognise as
sentinels became no-ops. Python has no audit event for assigning a class or module attribute
(``sys.addaudithook`` sees ``TestCase.run = f`` as nothing), so the adapters take a **snapshot**
before any test module or workspace code is imported, and compare it with the live objects
after every test and at the end:

- every method (any callable, property, class- or staticmethod) of every class the framework
  defines (``unittest.case.TestCase``, ``TestResult``, ``TestSuite``, pytest's ``Function``,
  ``TestReport``, ``CallInfo``, pluggy's hook callers, …) and of the adapter's own result class:
  the same object, none removed, none added (settings such as ``TestCase.maxDiff`` may change);
- every function or class a framework module defines at its top level (``_pytest.runner.
  call_and_report``, ``pluggy._callers._multicall``), and every builtin (``__build_class__``,
  ``__import__``, ``isinstance``): the same object;
- the adapter's channel (its module and its stream object: no ``write`` of its own);
- per test, the test function itself and its code object as loaded (a test replaced by a
  no-op after it was collected), and no ``run``-like attribute on the test instance.

Each finding becomes one ``{"tampered": "<what>"}`` line (the harness judges the run
``evidence-tampered``). This catches code that patches the framework and leaves the patch in
place while any test runs; code aimed at this guard can still defeat it from the same process
(replace the guard's own functions, patch and restore around each check, or write through the
adapter's descriptor): README, "Sealed outcomes". Stdlib only.
"""

import builtins
import sys
import types

_MISSING = object()
_vars, _getattr, _isinstance, _id = vars, getattr, isinstance, id


class Guard:
    """A snapshot of ``modules``' classes and functions, the builtins and ``extra`` owners."""

    def __init__(self, prefixes, extra=()):
        self._owners = []  # (label, owner, {key: value}, whole): whole = a class, every key counts
        seen = set()
        for name, module in sorted(sys.modules.items()):
            if module is None or not any(name == p or name.startswith(p + ".") for p in prefixes):
                continue
            mine = {}
            for key, value in list(_vars(module).items()):
                defined_here = _getattr(value, "__module__", None) == name
                if _isinstance(value, type) and defined_here and _id(value) not in seen:
                    seen.add(_id(value))
                    self._add(f"{name}.{value.__qualname__}", value, whole=True)
                if defined_here and _isinstance(value, (types.FunctionType, type)):
                    mine[key] = value
            self._owners.append((name, module, mine, False))
        self._owners.append(("builtins", builtins, dict(_vars(builtins)), False))
        for label, owner in extra:  # every key of these counts, added ones too
            self._add(label, owner, whole=True)
        self._tests = {}

    def _add(self, label, owner, *, whole):
        self._owners.append((label, owner, dict(_vars(owner)), whole))

    def watch_test(self, test, function, current=None):
        """Remember ``function`` (the test as loaded) for ``test``'s later checks; ``current``
        looks up what the framework will call for it now (unittest: the class attribute)."""
        self._tests[_id(test)] = (test, function, _getattr(function, "__code__", None), current)

    def changed(self, test=None, *, names=("run", "__call__", "debug", "runtest")):
        """What differs from the snapshot now (and, for ``test``, from its function as loaded)."""
        found = []
        for label, owner, before, whole in self._owners:
            now = _vars(owner)
            for key, value in before.items():
                current = now.get(key, _MISSING)
                if current is not value and (_matters(value) or _matters(current)):
                    found.append(f"{label}.{key} {'removed' if current is _MISSING else 'replaced'}")
            if whole:
                found += [f"{label}.{key} added" for key in now.keys() - before.keys() if _matters(now[key])]
        if test is not None:
            kept = self._tests.get(_id(test))
            if kept is not None:
                _, function, code, current = kept
                if _getattr(function, "__code__", None) is not code:
                    found.append(f"the code of {_name(function)} replaced")
                if current is not None and current() is not function:
                    found.append(f"the test {_name(function)} replaced on its class")
            attrs = _vars(test) if hasattr(test, "__dict__") else {}
            found += [f"{key} set on the test object {_name(test)}" for key in names if key in attrs]
        return found


def _matters(value):
    """Behaviour, not settings: a test suite may set ``TestCase.maxDiff``, never replace ``run``."""
    return value is not _MISSING and (
        callable(value) or _isinstance(value, (classmethod, staticmethod, property))
    )


def _name(obj):
    return _getattr(obj, "__qualname__", None) or type(obj).__qualname__
