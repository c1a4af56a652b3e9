"""Builds the plugin library with CMake and puts it inside the kernel_forge package."""

import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def torch_cmake_prefix() -> str:
    """torch.utils.cmake_prefix_path of the environment we install into.

    Under pip's build isolation `import torch` fails, but the interpreter's own site-packages
    (the target environment) still holds torch, so look there too."""
    try:
        import torch.utils
        return torch.utils.cmake_prefix_path
    except ImportError:
        pass
    for key in ("platlib", "purelib"):
        cand = os.path.join(sysconfig.get_paths()[key], "torch", "share", "cmake")
        if os.path.isdir(cand):
            return cand
    sys.exit("kernel_forge: torch>=2.9 must be installed before building (pip install torch)")


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out = os.path.abspath(self.get_ext_fullpath(ext.name))
        build_dir = os.path.join(ROOT, "build", "py-" + sysconfig.get_config_var("SOABI"))
        cfg = [
            "cmake", "-S", ROOT, "-B", build_dir, "-DKF_BUILD_TESTS=OFF",
            f"-DTORCH_CMAKE_PREFIX={torch_cmake_prefix()}",
            "-DCMAKE_BUILD_TYPE=Release",
        ]
        if shutil.which("ninja"):
            cfg += ["-G", "Ninja"]
        extra = os.environ.get("KFORGE_CMAKE_ARGS")
        if extra:
            cfg += extra.split()
        subprocess.check_call(cfg)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "kforge", "kforge-worker",
                               "-j", str(os.cpu_count() or 2)])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copyfile(os.path.join(build_dir, "libkforge.so"), out)
        # the forge worker travels inside the package, next to the plugin library (an editable
        # install only copies declared extensions back to the source tree: copy it there too)
        dests = {os.path.dirname(out)}
        if self.inplace or getattr(self, "editable_mode", False):
            dests.add(os.path.join(ROOT, "kernel_forge"))
        for d in dests:
            worker = os.path.join(d, "kforge-worker")
            shutil.copyfile(os.path.join(build_dir, "kforge-worker"), worker)
            os.chmod(worker, 0o755)


setup(
    ext_modules=[Extension("kernel_forge._kforge", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
