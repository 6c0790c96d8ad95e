"""The repository's Dockerfile and .dockerignore as data (dockerfile-parse), for the image tests."""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from dockerfile_parse import DockerfileParser

from tests.chart.render import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    name: str  # upper case: "RUN", "COPY", ...
    value: str


@dataclass(frozen=True)
class Stage:
    base: str  # the FROM image with build args substituted
    name: str | None
    instructions: tuple[Instruction, ...] = field(default=())

    def all(self, name: str) -> list[str]:
        return [i.value for i in self.instructions if i.name == name]

    def last(self, name: str) -> str | None:
        values = self.all(name)
        return values[-1] if values else None


@cache
def stages() -> tuple[Stage, ...]:
    parser = DockerfileParser(path=str(DOCKERFILE), env_replace=True)
    bases = iter(parser.parent_images)  # FROM images with ARG defaults substituted, in order
    found: list[Stage] = []
    current: list[Instruction] = []
    header: tuple[str, str | None] | None = None
    for item in parser.structure:
        name, value = item["instruction"], item["value"]
        if name == "COMMENT":
            continue
        if name == "FROM":
            if header is not None:
                found.append(Stage(base=header[0], name=header[1], instructions=tuple(current)))
            words = value.split()
            alias = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            header, current = (next(bases), alias), []
        elif header is not None:
            current.append(Instruction(name, value))
    if header is not None:
        found.append(Stage(base=header[0], name=header[1], instructions=tuple(current)))
    return tuple(found)


def arg_default(name: str) -> str | None:
    """The default of a build ARG declared in any stage."""
    for stage in stages():
        for value in stage.all("ARG"):
            key, _, default = value.partition("=")
            if key.strip() == name:
                return default.strip().strip('"')
    return None


def final_stage_user() -> tuple[int, int]:
    """The numeric uid and gid the image runs as; fails when USER is missing or not numeric."""
    user = stages()[-1].last("USER")
    assert user is not None, "the final stage sets no USER: the image would run as root"
    uid, _, gid = user.partition(":")
    if not (uid.isdigit() and gid.isdigit()):
        raise AssertionError(f"USER {user!r} must be numeric uid:gid (runAsNonRoot can only check numbers)")
    return int(uid), int(gid)


def exec_form(value: str) -> list[str]:
    """ENTRYPOINT/CMD in exec (JSON) form; fails on the shell form, which would wrap the process in sh."""
    parsed = json.loads(value)
    if not (isinstance(parsed, list) and all(isinstance(part, str) for part in parsed)):
        raise AssertionError(f"not an exec-form list of strings: {value}")
    return parsed


def parser_directives(text: str | None = None) -> dict[str, str]:
    """The `# name=value` lines at the top of the Dockerfile, which the builder reads before anything else."""
    directives: dict[str, str] = {}
    for line in (DOCKERFILE.read_text() if text is None else text).splitlines():
        match = re.fullmatch(r"#\s*([A-Za-z_-]+)\s*=\s*(.*?)\s*", line)
        if match is None:
            break
        directives[match.group(1).lower()] = match.group(2)
    return directives


def shell_commands(run: str) -> list[list[str]]:
    """The commands of a RUN instruction in shell form, split at `&&` (each one a list of words)."""
    return [shlex.split(command) for command in run.split("&&")]


def copy_sources(instruction: str) -> list[str]:
    """The build-context sources of one COPY/ADD (none when it copies from another stage)."""
    words = shlex.split(instruction)
    if any(word.startswith("--from=") for word in words):
        return []
    paths = [word for word in words if not word.startswith("--")]
    return paths[:-1]


def _ignore_patterns() -> list[tuple[bool, str]]:
    patterns: list[tuple[bool, str]] = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = posixpath.normpath(line.lstrip("!").strip().lstrip("/"))
        patterns.append((negated, pattern))
    return patterns


def _pattern_matches(pattern: str, path: str) -> bool:
    # Like Docker: a pattern that matches a parent directory matches everything below it, and `**` spans
    # any number of directories.
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    if pattern.startswith("**/"):
        tail = pattern[3:]
        return any(fnmatch.fnmatchcase(part, tail) for part in parts) or any(
            fnmatch.fnmatchcase(c, tail) for c in candidates
        )
    return any(_segment_match(pattern, candidate) for candidate in candidates)


def _segment_match(pattern: str, path: str) -> bool:
    pattern_parts, path_parts = pattern.split("/"), path.split("/")
    return len(pattern_parts) == len(path_parts) and all(
        fnmatch.fnmatchcase(name, glob) for glob, name in zip(pattern_parts, path_parts, strict=True)
    )


def in_build_context(path: str | Path) -> bool:
    """Whether a repository path reaches the build context under .dockerignore (last matching rule wins)."""
    relative = Path(path).as_posix()
    included = True
    for negated, pattern in _ignore_patterns():
        if _pattern_matches(pattern, relative):
            included = negated
    return included
