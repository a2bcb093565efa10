"""Every module of the project imports on its own, in a fresh interpreter, in any order (no import cycle).

Why: a cycle dodged by import order works until someone imports the modules the other way round (a new
CLI entry point, a test run alone), and then fails with a half-initialised module.
"""

from __future__ import annotations

import random
import subprocess
import sys

from tests.conftest import ROOT

PACKAGES = ("stacks", "serving", "components", "deploy", "preview", "verify", "job_scripts", "policy", "gemma_mcp")


def project_modules() -> list[str]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_every_module_imports_alone_and_in_shuffled_order() -> None:
    """In a fresh interpreter, each module is imported first (alone, the project forgotten before each), then
    all of them in a shuffled order (the project forgotten once more, so that order is what runs)."""
    modules = project_modules()
    shuffled = modules[:]
    random.Random(14).shuffle(shuffled)  # noqa: S311 - a fixed shuffle, not a secret
    script = (
        "import gc, importlib, sys, tempfile\n"
        f"project = {PACKAGES!r}\n"
        "def loaded():\n"
        "    return {m for m in sys.modules if m.split('.')[0] in project}\n"
        "def forget_the_project():\n"
        "    for name in loaded():\n"
        "        del sys.modules[name]\n"
        # Each module is imported anew some fifteen times (with every module that imports it): compile it once.
        # Its bytecode goes to a temporary folder, whatever PYTHONDONTWRITEBYTECODE says (CI sets it); the
        # libraries, loaded before that and never forgotten, keep their own.
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "cache = tempfile.TemporaryDirectory()\n"
        "sys.pycache_prefix, sys.dont_write_bytecode = cache.name, False\n"
        # Every forgotten module is garbage in reference cycles (its functions point back at its namespace):
        # the collector would walk the whole growing heap again and again, a third of the time. The process
        # ends when the test does, so its garbage can wait for the end (some 450 MB at the peak).
        "gc.disable()\n"
        # A module its package imports is loaded by importing the package alone (Python imports the package
        # first and then finds the module already there), so importing it alone is importing the package
        # alone, which ran already: what each import left loaded says which modules those are.
        "left = {}\n"
        f"for name in {modules!r}:\n"
        "    package = name.rpartition('.')[0]\n"
        "    if name in left.get(package, ()):\n"
        "        left[name] = left[package]\n"
        "        continue\n"
        "    forget_the_project()\n"
        "    importlib.import_module(name)\n"
        "    left[name] = loaded()\n"
        "forget_the_project()\n"
        f"for name in {shuffled!r}:\n"
        "    importlib.import_module(name)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False, timeout=120
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
