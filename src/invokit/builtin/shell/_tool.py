"""``shell(...)``: the toolset holding one ``shell`` tool built from :class:`ShellSettings`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin.shell._checks import check
from invokit.builtin.shell._command import MAX_ARG_CHARS, MAX_ARGS, MAX_STRING_CHARS
from invokit.builtin.shell._execute import ShellOutput, execute
from invokit.builtin.shell._flags import policy_argv
from invokit.builtin.shell._rules import AllowList
from invokit.builtin.shell._sandbox import find_bwrap, start_probe
from invokit.builtin.shell._settings import SandboxMode, ShellSettings
from invokit.exceptions import InvalidToolDefinition
from invokit.permissions import FileWrite, PermissionRequest, ShellExec
from invokit.registry import ToolRegistry
from invokit.tools import tool

__all__ = ["shell"]

# The executor's own deadline is a backstop: the tool's timeout fires first and kills the
# process tree, so the model gets the output and ``timed_out`` instead of a bare timeout.
_EXECUTOR_MARGIN = 10.0

# The caps are in the schema, so the executor refuses an oversized command as invalid
# arguments before any preflight work; parse_command checks them again (and the total).
CommandArg = Annotated[
    Annotated[list[Annotated[str, Field(max_length=MAX_ARG_CHARS)]], Field(max_length=MAX_ARGS)]
    | Annotated[str, Field(max_length=MAX_STRING_CHARS)],
    Field(
        description="The program and its arguments as a list of strings (preferred), or one "
        "string split into words like a shell would, which must not use any shell syntax "
        "(no pipes, redirections, variables, globs, ';' or '&&')."
    ),
]
CwdArg = Annotated[
    str,
    Field(max_length=4096, description="Working directory, relative to the root folder."),
]


def shell(
    *,
    allow: Iterable[str],
    root: str | os.PathLike[str],
    sandbox: SandboxMode = "auto",
    timeout: float = 30.0,
    max_output: int = 100_000,
    env: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
    network: bool = False,
    writable: bool = True,
    expose: Iterable[str | os.PathLike[str]] = (),
    protected: Iterable[str | os.PathLike[str]] = (),
    name: str = "shell",
    allow_surfaces: Iterable[str] = (),
) -> ToolRegistry:
    """A toolset with one tool that runs allowed programs, without a shell, in a sandbox.

    Args:
        allow: allow rules such as ``"git status"``, ``"git diff *"``, ``"ls *"``; a command
            runs only if one matches (see the shell tool docs for the rule syntax).
        root: the folder commands run in; the only place a sandboxed command can write.
        sandbox: ``"auto"`` uses bubblewrap when it works here and says in each result when
            it did not; ``"required"`` refuses to run without it; ``"off"`` never uses it.
        timeout: seconds before a command and every process it started are killed.
        max_output: bytes kept of each of stdout and stderr; the rest is read and dropped.
        env: variables to set for every command, over the small fixed base environment.
        pass_env: names of host variables to copy into the command's environment.
        network: whether sandboxed commands may use the network.
        writable: whether sandboxed commands may write in the root (also sets the hints).
        expose: more host folders to show read-only inside the sandbox (a toolchain).
        protected: files and folders that decide what may run (the CLI's ``invokit.toml``, a
            policy file, a state directory), existing or not; relative paths are relative to
            ``root``. In the sandbox each existing one inside the root is mounted read-only
            (and cannot be moved or deleted); without a sandbox no command runs at all while
            any is configured (``AccessDenied``, before a policy or person is asked).
        name: the tool's name.
        allow_surfaces: execution surfaces (root-relative) to leave writable in the sandbox.
            Every other one that exists (the git directory whole, ``.vscode/``, ``.envrc``
            ...; see ``docs/policy.md``) is mounted read-only: git and editors read it, a
            command that writes it fails and the result says why. While one listed here
            exists, every command also declares ``FileWrite`` of it, marked, so that the
            policy asks about each command with what runs it (give the policy the same list).

    Raises:
        InvalidToolDefinition: no allow rule, a malformed rule, or an unusable option.
    """
    if sandbox not in ("auto", "required", "off"):
        raise InvalidToolDefinition("sandbox must be 'auto', 'required' or 'off'", sandbox)
    if timeout <= 0 or max_output < 0:
        raise InvalidToolDefinition("timeout must be positive and max_output not negative")
    resolved_root = Path(os.path.realpath(root))
    if resolved_root == Path("/"):
        raise InvalidToolDefinition("the shell tool's root cannot be '/'", str(root))
    settings = ShellSettings(
        allow=AllowList(allow),
        root=resolved_root,
        sandbox=sandbox,
        timeout=timeout,
        max_output=max_output,
        env=dict(env or {}),
        pass_env=tuple(pass_env),
        network=network,
        writable=writable,
        expose=tuple(Path(os.path.realpath(path)) for path in expose),
        protected=tuple(Path(os.path.abspath(resolved_root / path)) for path in protected),
        allow_surfaces=_surface_list(allow_surfaces),
    )
    env_keys = tuple(sorted(settings.environment()))
    # Each command is checked twice; both read the root's surfaces through this cache.
    cache = SurfaceCache()
    if sandbox != "off":
        # The first preflight runs on the event loop and needs the probe's answer.
        start_probe()

    def permissions(args: Mapping[str, Any]) -> Iterable[PermissionRequest]:
        # Everything that would refuse the command when it runs refuses it now, so that no
        # one is asked to approve a command that cannot run. The probe for bubblewrap runs
        # once per process (cached).
        cwd = args.get("cwd", ".")
        bwrap = None if settings.sandbox == "off" else find_bwrap()
        checked = check(settings, args["command"], cwd, bwrap=bwrap, cache=cache)
        argv = checked.argv
        requests: list[PermissionRequest] = [ShellExec(argv=argv, cwd=cwd, env_keys=env_keys)]
        # A writable surface may be changed by any command: the policy asks about each one.
        requests += [
            FileWrite(path="/".join(found.parts), surface=found.runs) for found in checked.opted_in
        ]
        canonical = policy_argv(argv)
        if canonical != argv:
            # Both spellings go to the policy; the stricter verdict wins.
            requests.append(ShellExec(argv=canonical, cwd=cwd, env_keys=env_keys))
        return requests

    @tool(
        name=name,
        description=_description(settings),
        read_only=False,
        destructive=writable,
        idempotent=False,
        open_world=network,
        tags=("shell",),
        category="shell",
        timeout=timeout + _EXECUTOR_MARGIN,
        permissions=permissions,
        metadata={"sandbox": sandbox, "network": network, "writable": writable},
    )
    async def run(command: CommandArg, cwd: CwdArg = ".") -> ShellOutput:
        return await execute(settings, command, cwd, cache=cache)

    if writable or sandbox != "required":
        # Without a sandbox a command writes wherever the host user can, the root included.
        run._writable_roots = (resolved_root,)
    return ToolRegistry([run])


def _surface_list(paths: Iterable[str]) -> tuple[str, ...]:
    if isinstance(paths, str):
        raise InvalidToolDefinition("allow_surfaces is a list of paths, not one string", paths)
    return tuple(paths)


def _description(settings: ShellSettings) -> str:
    rules = ", ".join(f"`{rule.text}`" for rule in settings.allow.rules)
    access = "read and write" if settings.writable else "read"
    network = "with" if settings.network else "without"
    return (
        "Run one allowed program with arguments, directly, not through a shell: there are no "
        "pipes, redirections, variables or globs. "
        f"Allowed commands (a final * allows any further arguments): {rules}. "
        f"The program runs in the root folder (it can {access} files there), {network} network "
        f"access, and is killed after {settings.timeout:g} seconds. Returns the exit code, "
        "stdout and stderr; a non-zero exit is reported as an error with the output."
    )
