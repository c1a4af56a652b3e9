"""The zoo's harness (benchmarks/zoo/models/_zoo.py) for the held-out scripts beside it."""

import importlib.util
import os

_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo", "models", "_zoo.py")
_spec = importlib.util.spec_from_file_location("_zoo_harness", _path)
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)
parse, maybe_compile, bench, _ab = _harness.parse, _harness.maybe_compile, _harness.bench, _harness._ab
