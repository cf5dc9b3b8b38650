"""The package's PEP 517 build backend: maturin, after putting `ptc-runner` into the package.

`Client.embedded()` needs the sandbox's runner binary, so a wheel carries it as package data
(`ptc_sandbox/bin/ptc-runner`). Before maturin builds the extension, this builds the runner with
cargo, with the same profile maturin will use (release unless `MATURIN_PEP517_ARGS` or the
`build-args` config setting say `--profile NAME`) and in the same target directory, so the two builds share their dependencies.
Everything else is maturin's backend unchanged.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

from maturin import (  # noqa: F401  (re-exported hooks)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)
import maturin

PROJECT = Path(__file__).resolve().parent.parent
DEST = PROJECT / "ptc_sandbox" / "bin" / "ptc-runner"


def _profile(config_settings) -> str:
    args = maturin.get_maturin_pep517_args(config_settings)
    for i, arg in enumerate(args):
        if arg == "--profile" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
    return "release"


def _build_runner(config_settings) -> None:
    cmd = [
        os.environ.get("CARGO", "cargo"), "build", "-p", "ptc-runner", "--bin", "ptc-runner",
        "--profile", _profile(config_settings), "--message-format", "json-render-diagnostics",
    ]
    out = subprocess.run(cmd, cwd=PROJECT, stdout=subprocess.PIPE, check=True, text=True).stdout
    exe = None
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            if msg["target"]["name"] == "ptc-runner":
                exe = msg["executable"]
    if exe is None:
        raise RuntimeError("cargo built no ptc-runner executable")
    DEST.parent.mkdir(exist_ok=True)
    tmp = DEST.with_suffix(".tmp")
    shutil.copyfile(exe, tmp)
    os.chmod(tmp, 0o755)
    os.replace(tmp, DEST)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _build_runner(config_settings)
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _build_runner(config_settings)
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
