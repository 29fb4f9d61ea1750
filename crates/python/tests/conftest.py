"""Shared helpers of the tracekit Python tests: the corpus, the oracles, the CLI."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def corpus_dir() -> Path:
    """The shared corpus: ``$TRACEKIT_CORPUS`` or ``../shared/corpus`` beside the repository."""
    return Path(os.environ.get("TRACEKIT_CORPUS", REPO.parent / "shared" / "corpus"))


def corpus(name: str) -> str:
    path = corpus_dir() / name
    if not path.exists():
        pytest.skip(f"corpus file {path} missing")
    return str(path)


def oracles_required() -> bool:
    return os.environ.get("TRACEKIT_REQUIRE_ORACLES") == "1"


def need(tool: str) -> str:
    """The path of an oracle tool; skips the test (fails under TRACEKIT_REQUIRE_ORACLES=1)
    when it is missing."""
    path = shutil.which(tool)
    if path is None:
        if oracles_required():
            pytest.fail(f"{tool} is required (TRACEKIT_REQUIRE_ORACLES=1) but missing")
        pytest.skip(f"{tool} not installed: skipping this comparison")
    return path


def tshark_fields(path: str, fields: list[str], *extra: str) -> list[list[str]]:
    """``tshark -T fields`` rows (first occurrence of each field) of a trace."""
    tshark = need("tshark")
    cmd = [tshark, "-n", "-r", path, "-T", "fields", "-E", "occurrence=f", *extra]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    return [line.split("\t") for line in out.splitlines()]


def epoch_ns(text: str) -> int:
    """``seconds.fraction`` as tshark prints time stamps, in integer nanoseconds."""
    secs, _, frac = text.partition(".")
    return int(secs) * 1_000_000_000 + int((frac + "000000000")[:9])


def tracekit_cli() -> str:
    """The `tracekit` command: ``$TRACEKIT_BIN``, else the workspace's debug build (built
    here if needed)."""
    explicit = os.environ.get("TRACEKIT_BIN")
    if explicit:
        return str(REPO / explicit)  # a relative path is taken from the repository root
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "debug" / "tracekit"
    subprocess.run(
        ["cargo", "build", "-q", "-p", "tracekit-cli", "--bin", "tracekit"],
        cwd=REPO,
        check=True,
    )
    return str(binary)


@pytest.fixture(scope="session")
def cli() -> str:
    return tracekit_cli()
