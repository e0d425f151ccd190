"""The kopf operator (installed as draftgen.controller; `operator` would shadow the stdlib)."""

if __name__ == "operator":  # pragma: no cover - only when the repository root is on sys.path
    # `python -m ...` run from the repository root finds this directory before the standard
    # library's `operator`; load the standard library's module in our place. Only modules that
    # are loaded before `operator` at start-up may be used here (importlib.util is not one).
    import os as _os
    import sys as _sys
    from importlib.machinery import SourceFileLoader as _Loader

    _path = _os.path.join(_os.path.dirname(_os.__file__), "operator.py")
    _stdlib = type(_sys)("operator")
    _stdlib.__file__ = _path
    _stdlib.__loader__ = _Loader("operator", _path)
    _sys.modules["operator"] = _stdlib
    _stdlib.__loader__.exec_module(_stdlib)
    globals().update({k: v for k, v in vars(_stdlib).items() if not k.startswith("__")})
