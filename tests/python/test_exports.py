"""include/kforge.h is the one public header: every symbol the plugin library exports is declared
there (with KF_API), and everything it declares with KF_API is exported."""
import os
import re
import shutil
import subprocess

import pytest

import kernel_forge

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def declared():
    text = open(os.path.join(ROOT, "include", "kforge.h")).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
    names = set()
    for decl in re.findall(r"KF_API\s+([^;{]*?)\(", text):
        names.add(re.findall(r"[A-Za-z_]\w*", decl)[-1])
    return names


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_exported_symbols_are_the_header():
    out = subprocess.run(["nm", "-D", "--defined-only", kernel_forge.library_path()],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines()
                if len(line.split()) == 3 and line.split()[1] in "TDBR"}
    ours = {s for s in exported if s.startswith("kf_")}
    decl = declared()
    assert ours - decl == set(), "exported but not declared in include/kforge.h"
    assert decl - ours == set(), "declared KF_API in include/kforge.h but not exported"
    assert {"kf_runtime_get", "kf_set_observer", "kf_cache_dir_import"} <= ours
