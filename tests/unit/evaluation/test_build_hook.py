"""The build hook of the metrics accelerator (``hatch_build.py``): it compiles ``_accel.c`` with this interpreter's
compiler settings into a wheel (tagged for the platform) or in place (editable), and when it cannot (no compiler,
``CC=/bin/false``, ``DELTAP_ACCEL=0``) the build still succeeds, pure, with one line saying why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.unit.evaluation.conftest import REPO, load_extension, load_hatch_build


@pytest.fixture(scope="module")
def hb() -> ModuleType:
    return load_hatch_build()


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in ("CC", "DELTAP_ACCEL")}, **extra}


@pytest.fixture(scope="module")
def system_compiler(hb: ModuleType) -> list[str]:
    cc = hb.compiler(_env())
    if not shutil.which(cc[0]):
        pytest.skip(f"no C compiler here ({cc[0]!r} not found): the build falls back to pure Python, tested below")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python.h for this interpreter: the build falls back to pure Python, tested below")
    return cc


def test_the_module_builds_with_the_system_compiler_and_loads(
    hb: ModuleType, system_compiler: list[str], tmp_path: Path
) -> None:
    built, said = hb.build(tmp_path, _env())
    assert built == tmp_path / hb.module_name() and built.name.endswith(sysconfig.get_config_var("EXT_SUFFIX"))
    assert (
        said.startswith(f"deltap: metrics accelerator built with {' '.join(system_compiler)} in ") and "\n" not in said
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [built.name]  # no temporary file left
    module = load_extension(built)
    assert module.SOURCE_SHA256 == hb.source_sha256()
    out = np.zeros(2)
    assert module.pack([{"a": 0.5}, {"b": -1.0}], out) == 2 and out.tolist() == [0.5, -1.0]


def test_the_source_compiles_without_a_warning(hb: ModuleType, system_compiler: list[str], tmp_path: Path) -> None:
    command = hb.compile_command(tmp_path / hb.module_name(), system_compiler)
    assert {"-Wall", "-Wextra"} <= set(command)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "", done.stderr


def test_a_regular_wheel_gets_the_module_and_a_platform_tag(
    hb: ModuleType, system_compiler: list[str], tmp_path: Path
) -> None:
    build_data: dict = {"force_include": {}, "pure_python": True, "infer_tag": False}
    built, _ = hb.prepare(REPO, "standard", build_data, tmp_path, _env())
    assert built is not None and built.parent == tmp_path
    assert build_data == {
        "force_include": {str(built): f"deltap/evaluation/{hb.module_name()}"},
        "pure_python": False,
        "infer_tag": True,
    }


def test_an_editable_install_builds_in_place(hb: ModuleType, system_compiler: list[str], tmp_path: Path) -> None:
    build_data: dict = {"force_include": {}, "pure_python": True}
    built, _ = hb.prepare(tmp_path, "editable", build_data, tmp_path / "scratch", _env())
    assert built == tmp_path / "src" / "deltap" / "evaluation" / hb.module_name()
    assert build_data == {"force_include": {}, "pure_python": True}  # the editable wheel itself stays pure


@pytest.mark.parametrize(
    "env,why",
    [
        ({"CC": "/bin/false"}, "(/bin/false failed, exit status 1)"),
        ({"CC": "/no/such/cc"}, "(no C compiler: '/no/such/cc' not found)"),
        ({"DELTAP_ACCEL": "0", "CC": "/bin/false"}, "(DELTAP_ACCEL=0)"),
    ],
)
def test_without_a_compiler_the_wheel_is_pure_and_one_line_says_why(
    hb: ModuleType, tmp_path: Path, env: dict[str, str], why: str
) -> None:
    build_data: dict = {"force_include": {}, "pure_python": True, "infer_tag": False}
    built, said = hb.prepare(REPO, "standard", build_data, tmp_path, _env(**env))
    assert built is None and build_data == {"force_include": {}, "pure_python": True, "infer_tag": False}
    assert said == (
        f"deltap: metrics accelerator not built {why}; deltap runs its pure-Python path (same results, slower from "
        "dicts)"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_editable_install_without_a_compiler_removes_an_earlier_build(hb: ModuleType, tmp_path: Path) -> None:
    earlier = tmp_path / "src" / "deltap" / "evaluation" / hb.module_name()
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"an older build")
    built, said = hb.prepare(tmp_path, "editable", {"force_include": {}}, tmp_path / "scratch", _env(CC="/bin/false"))
    assert built is None and not earlier.exists()
    assert said.endswith(f"(removed the earlier build {earlier})") and "\n" not in said


def test_the_in_place_command(hb: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hb, "SOURCE", tmp_path / "_accel.c")
    shutil.copyfile(REPO / "src" / "deltap" / "evaluation" / "_accel.c", tmp_path / "_accel.c")
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.delenv("DELTAP_ACCEL", raising=False)
    assert hb.main() == 1
    assert capsys.readouterr().out.startswith("deltap: metrics accelerator not built (/bin/false failed")
    monkeypatch.setenv("DELTAP_ACCEL", "0")
    assert hb.main() == 0  # asked for pure Python: not a failure


def test_the_project_wires_the_hook_and_ignores_the_built_module() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '[tool.hatch.build.targets.wheel.hooks.custom]\npath = "hatch_build.py"\n' in pyproject
    assert "/src/deltap/evaluation/_accel*.so" in (REPO / ".gitignore").read_text().splitlines()
    name = "src/deltap/evaluation/_accel" + str(sysconfig.get_config_var("EXT_SUFFIX"))
    done = subprocess.run(["git", "check-ignore", "-q", name], cwd=REPO, check=False, capture_output=True)
    assert done.returncode in (0, 128), done.stderr  # ignored (128: not a git checkout, e.g. an unpacked sdist)


def test_hatchling_builds_a_platform_wheel_with_the_module(
    hb: ModuleType, system_compiler: list[str], tmp_path: Path
) -> None:
    pytest.importorskip("hatchling", reason="hatchling is not installed here (pip installs it in its build env)")
    from hatchling.builders.wheel import WheelBuilder

    wheel = Path(next(iter(WheelBuilder(str(REPO)).build(directory=str(tmp_path), versions=["standard"]))))
    assert not wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert names.count(f"deltap/evaluation/{hb.module_name()}") == 1
