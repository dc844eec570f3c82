"""Shared fixtures: paths to the real data (tests skip with a reason when it is absent).

The data folder is ``$DELTAP_SHARED_DATA`` when that variable is set (a folder holding ``cranfield/`` and ``adk/``),
else ``../shared/data`` beside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
ENV_VAR = "DELTAP_SHARED_DATA"


def shared_data_dir(environ: dict[str, str] | None = None) -> Path:
    """Where the shared data lives: ``$DELTAP_SHARED_DATA`` if set (and not empty), else ``../shared/data``."""
    env = os.environ if environ is None else environ
    configured = env.get(ENV_VAR, "").strip()
    return Path(configured).expanduser() if configured else REPO.parent / "shared" / "data"


SHARED_DATA = shared_data_dir()


def require_shared(path: Path) -> Path:
    """``path`` if it exists; otherwise skip the test, saying where it looked and how to point it elsewhere."""
    if not path.exists():
        pytest.skip(
            f"shared data not found at {path}: set {ENV_VAR} to the folder holding cranfield/ and adk/ "
            "(default: ../shared/data beside the checkout)"
        )
    return path


_require = require_shared  # the older private name, still used by some test modules


@pytest.fixture(autouse=True)
def _pace_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test keeps the solver pace its runs measure (``deltap.trials.pace``) in a file of its own, never in the
    user's cache (``~/.cache/deltap/pace.json``), so no test sees another's measurement."""
    import uuid

    monkeypatch.setenv("DELTAP_PACE_CACHE", str(tmp_path_factory.getbasetemp() / f"pace-{uuid.uuid4().hex}.json"))


@pytest.fixture(scope="session")
def cranfield_dir() -> Path:
    return require_shared(SHARED_DATA / "cranfield")


@pytest.fixture(scope="session")
def adk_dir() -> Path:
    return require_shared(SHARED_DATA / "adk")


# ---------------------------------------------------------------------------------------------------------------
# Parallel runs (pytest-xdist, issue 37). The README's plain ``python -m pytest`` runs the whole suite on every core,
# up to MAX_WORKERS (``-m``/``-k`` subsets of it too); a run given test paths (what one runs while editing), ``--pdb``
# or ``--collect-only`` stays in one process unless ``-n`` is given. ``-n 0`` or ``-p no:xdist`` runs everything
# serially (to debug).
#
# Scheduling: a test that shares a fixture wider than itself (module, class or package scope, or a session fixture
# of its own module), or carries an ``xdist_group`` mark, runs in one worker with the rest of its group, so the
# fixture is built once; every other test is scheduled on its own. Workers write which tests share what (they alone
# see the fixtures) to a file the controller's scheduler reads: xdist's own ``--dist loadgroup`` does not group under
# pytest 9 (it renames ``item._nodeid``, which pytest no longer reads). Larger groups go first.

#: Most workers a default run starts (each imports the stack and may load a real model; memory grows with them).
MAX_WORKERS = 4

_GROUPS_DIR = pytest.StashKey[str]()


def _default_workers(config: pytest.Config) -> int:
    try:
        n = int(config.hook.pytest_xdist_auto_num_workers(config=config))
    except Exception:  # pragma: no cover - xdist's own count failed: one per CPU this process may use
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(n, MAX_WORKERS))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    option = config.option
    if (
        option.numprocesses is None
        and not option.usepdb
        and not option.collectonly
        and config.args_source is pytest.Config.ArgsSource.TESTPATHS
    ):
        workers = _default_workers(config)
        if workers > 1:
            option.numprocesses = workers
    if option.numprocesses and option.dist == "no":
        option.dist = "loadgroup"  # not xdist's "load": it would build a module's shared fixture in every worker


def _group_of(item: pytest.Item) -> str | None:
    """The scheduling group of a test (``None``: scheduled on its own)."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return "group:" + str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    info = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::", 1)[0]
    fixtures = [defs[-1] for defs in info.name2fixturedefs.values()] if info is not None else []
    for fixture in fixtures:  # a package fixture (a conftest's) groups the tests of every module that uses it
        if fixture.scope == "package":
            return "package:" + fixture.baseid
    for fixture in fixtures:
        wide = fixture.scope in ("class", "module")
        if wide or (fixture.scope == "session" and fixture.baseid.split("::", 1)[0] == module):
            return "module:" + module
    return None


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown (and never called) under -p no:xdist
def pytest_configure_node(node: Any) -> None:
    """(xdist, controller) Give every worker the folder where it writes the groups it collected."""
    config = node.config
    if config.option.dist != "loadgroup":
        return
    if _GROUPS_DIR not in config.stash:
        folder = tempfile.mkdtemp(prefix="deltap-xdist-groups-")
        config.stash[_GROUPS_DIR] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    node.workerinput["deltap_groups_dir"] = config.stash[_GROUPS_DIR]


@pytest.hookimpl(trylast=True)  # the final list of items, after deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    folder = getattr(config, "workerinput", {}).get("deltap_groups_dir")
    if folder is None:
        return
    groups = {item.nodeid: group for item in items if (group := _group_of(item)) is not None}
    path = Path(folder) / f"{config.workerinput['workerid']}.json"  # type: ignore[attr-defined]
    path.with_suffix(".part").write_text(json.dumps(groups))
    path.with_suffix(".part").replace(path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """(xdist, controller) ``--dist loadgroup``: the groups the workers wrote, every other test on its own; without
    their file (a worker could not write it), whole modules, which is always safe."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    folder = Path(config.stash.get(_GROUPS_DIR, ""))

    class SharedFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                found = sorted(folder.glob("*.json")) if folder.name else []
                self.groups = json.loads(found[0].read_text()) if found else {}
                self.whole_modules = not found
            if self.whole_modules:
                return nodeid.split("::", 1)[0]
            return self.groups.get(nodeid, nodeid)

    return SharedFixtureScheduling(config, log)
