"""Arguments that make an allowed program run other code or write where it should not.

An allow rule such as ``"git diff *"`` means "let the model look at diffs", not "let the model
run ``git -c core.pager='sh -c …' diff``". For the programs people commonly allow, the options
and script commands that run programs, load code or write arbitrary files are listed here and
refused with the reason. The check is conservative: anything it cannot read (a script file, an
unknown ``sed`` command) is refused too. It is a second line, behind the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from invokit.builtin.shell._refusal import Refusal
from invokit.builtin.shell._scripts import check_awk, check_sed

__all__ = ["find_refusal"]


_Check = Callable[[str, Sequence[str]], Refusal | None]

_LAUNCHERS = frozenset(
    {
        "busybox", "chroot", "doas", "flock", "nice", "nohup", "nsenter", "parallel", "script",
        "setsid", "stdbuf", "strace", "sudo", "time", "timeout", "unshare", "watch", "xargs",
    }
)  # fmt: skip


def find_refusal(argv: Sequence[str]) -> Refusal | None:
    """The first refused argument of ``argv``, or ``None`` when nothing is known to be unsafe."""
    program = argv[0].rsplit("/", 1)[-1]
    if program in _LAUNCHERS and len(argv) > 1:
        return Refusal(
            program=program,
            argument=argv[1],
            reason=f"{program} runs the program named in its arguments, bypassing the allow "
            "rules; allow that program directly instead",
        )
    if program == "env":
        return _check_env(program, argv[1:])
    check = _CHECKS.get(program)
    return None if check is None else check(program, argv[1:])


_ENV_PLAIN = frozenset({"-", "-i", "-0", "--ignore-environment", "--null"})


def _check_env(program: str, args: Sequence[str]) -> Refusal | None:
    """``env`` only prints or sets variables here; given a command (or ``-S``) it is refused."""
    for arg in args:
        if arg in _ENV_PLAIN or ("=" in arg and not arg.startswith("-")):
            continue
        return Refusal(
            program=program,
            argument=arg,
            reason="env runs the program named in its arguments, bypassing the allow rules; "
            "allow that program directly instead",
        )
    return None


# -- option scanning ----------------------------------------------------------------------


def _long_name(arg: str) -> str:
    return arg.split("=", 1)[0]


def _long_matches(arg: str, names: frozenset[str], *, abbreviations: bool) -> bool:
    """Whether ``arg`` is one of the long options ``names`` (or, for getopt, a prefix of one)."""
    given = _long_name(arg)
    if given in names:
        return True
    # getopt_long and git's parse-options accept any unambiguous prefix ("--to-comm").
    return abbreviations and len(given) > 3 and any(name.startswith(given) for name in names)


def _scan_options(
    program: str,
    args: Sequence[str],
    *,
    long: dict[str, str],
    short: dict[str, str] | None = None,
    abbreviations: bool = True,
) -> Refusal | None:
    """Refuse the first option in ``long`` or ``short`` (``{flag: reason}``) before ``--``.

    Bundled short options (``-xvI``) are searched letter by letter; a letter inside an attached
    value can give a false refusal, which is the safe direction.
    """
    short = short or {}
    long_names = frozenset(long)
    for arg in args:
        if arg == "--":
            return None
        if arg.startswith("--"):
            if _long_matches(arg, long_names, abbreviations=abbreviations):
                given = _long_name(arg)
                reason = long.get(given) or next(
                    long[name] for name in sorted(long_names) if name.startswith(given)
                )
                return Refusal(program=program, argument=arg, reason=reason)
        elif arg.startswith("-") and len(arg) > 1 and not short.keys().isdisjoint(arg[1:]):
            # (A set operation in C first: a long bundle costs no Python loop unless it hits.)
            letter = next(letter for letter in arg[1:] if letter in short)
            return Refusal(program=program, argument=arg, reason=short[letter])
    return None


# -- git ----------------------------------------------------------------------------------

_RUNS_CONFIG = "sets configuration, which can name programs to run (core.pager, aliases)"
_GIT_GLOBAL = {
    "-c": _RUNS_CONFIG,
    "--config-env": _RUNS_CONFIG,
    "--exec-path": "runs git's helper programs from another directory",
    "-C": "runs git in another directory than the working directory",
    "--git-dir": "points git at a repository outside the working directory",
    "--work-tree": "points git at a work tree outside the working directory",
}
_GIT_GLOBAL_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace"})
_GIT_SUBCOMMAND_LONG = {
    "--upload-pack": "runs the given program as the remote upload-pack",
    "--receive-pack": "runs the given program as the remote receive-pack",
    "--exec": "runs the given program or shell command",
    "--output": "writes the output to a file of the caller's choosing",
    "--output-directory": "writes files into a directory of the caller's choosing",
    "--ext-diff": "runs an external diff program",
    "--open-files-in-pager": "runs the given pager program",
    "--template": "copies hooks (programs git later runs) from a template directory",
    "--config": _RUNS_CONFIG,
    "--sendmail-cmd": "runs the given program to send mail",
    "--to-cmd": "runs the given program to find recipients",
    "--cc-cmd": "runs the given program to find recipients",
    "--header-cmd": "runs the given program to build headers",
}
_GIT_SUBCOMMAND_SHORT = {
    "clone": {"u": "runs the given program as the remote upload-pack", "c": _RUNS_CONFIG},
    "rebase": {"x": "runs the given shell command after each commit"},
    "grep": {"O": "runs the given pager program"},
    "format-patch": {"o": "writes files into a directory of the caller's choosing"},
}
_GIT_REFUSED_SUBCOMMANDS = {
    "filter-branch": "runs shell commands given as filters",
    "difftool": "runs an external diff tool",
    "mergetool": "runs an external merge tool",
    "instaweb": "starts a web server and a browser",
}
_GIT_REFUSED_ACTIONS = {
    ("submodule", "foreach"): "runs a shell command in every submodule",
    ("bisect", "run"): "runs the given program at every step",
}


def policy_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` as a policy rule should see it: for git, without the global options before
    the subcommand, so ``git --no-pager push`` meets the rules written for ``git push``."""
    if not argv or os.path.basename(argv[0]) != "git":
        return tuple(argv)
    args = list(argv[1:])
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in _GIT_GLOBAL_WITH_VALUE else 1
    return (argv[0], *args[index:])


def _check_git(program: str, args: Sequence[str]) -> Refusal | None:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        arg = args[index]
        name = _long_name(arg) if arg.startswith("--") else arg[:2]
        if name in _GIT_GLOBAL and (name != "--exec-path" or "=" in arg):
            return Refusal(program=program, argument=arg, reason=_GIT_GLOBAL[name])
        index += 2 if arg in _GIT_GLOBAL_WITH_VALUE else 1
    if index >= len(args):
        return None
    subcommand, rest = args[index], args[index + 1 :]
    if subcommand in _GIT_REFUSED_SUBCOMMANDS:
        return Refusal(
            program=program, argument=subcommand, reason=_GIT_REFUSED_SUBCOMMANDS[subcommand]
        )
    for (command, action), reason in _GIT_REFUSED_ACTIONS.items():
        if subcommand == command and action in rest:
            return Refusal(program=program, argument=action, reason=reason)
    return _scan_options(
        program,
        rest,
        long=_GIT_SUBCOMMAND_LONG,
        short=_GIT_SUBCOMMAND_SHORT.get(subcommand),
    )


# -- search and file tools ----------------------------------------------------------------


def _check_rg(program: str, args: Sequence[str]) -> Refusal | None:
    return _scan_options(
        program,
        args,
        long={
            "--pre": "runs the given program on every file searched",
            "--hostname-bin": "runs the given program to find the host name",
        },
        abbreviations=False,
    )


def _check_fd(program: str, args: Sequence[str]) -> Refusal | None:
    runs = "runs the given command for the files found"
    return _scan_options(
        program,
        args,
        long={"--exec": runs, "--exec-batch": runs},
        short={"x": runs, "X": runs},
        abbreviations=False,
    )


_FIND_ACTIONS = {
    "-exec": "runs the given command for the files found",
    "-execdir": "runs the given command for the files found",
    "-ok": "runs the given command for the files found",
    "-okdir": "runs the given command for the files found",
    "-delete": "deletes the files found",
    "-fprint": "writes the file list to a file of the caller's choosing",
    "-fprint0": "writes the file list to a file of the caller's choosing",
    "-fprintf": "writes the file list to a file of the caller's choosing",
    "-fls": "writes the file list to a file of the caller's choosing",
}


def _check_find(program: str, args: Sequence[str]) -> Refusal | None:
    # find's expression has no "--" end and no abbreviations: every word is checked as is.
    for arg in args:
        if arg in _FIND_ACTIONS:
            return Refusal(program=program, argument=arg, reason=_FIND_ACTIONS[arg])
    return None


def _check_tar(program: str, args: Sequence[str]) -> Refusal | None:
    compress = "runs the given program to (de)compress the archive"
    long = {
        "--to-command": "runs the given command for every extracted file",
        "--use-compress-program": compress,
        "--checkpoint-action": "can run a command at every checkpoint",
        "--info-script": "runs the given script at the end of each volume",
        "--new-volume-script": "runs the given script at the end of each volume",
        "--rsh-command": "runs the given program to reach a remote archive",
        "--rmt-command": "runs the given program on the remote host",
    }
    short = {"I": compress, "F": "runs the given script at the end of each volume"}
    if not args or args[0].startswith("-"):
        return _scan_options(program, args, long=long, short=short)
    # Old-style "tar xIf a.tgz": the first word is a bundle of letters without a dash.
    refusal = _scan_options(program, ["-" + args[0], *args[1:]], long=long, short=short)
    if refusal is not None and refusal.argument == "-" + args[0]:
        return replace(refusal, argument=args[0])
    return refusal


def _check_sort(program: str, args: Sequence[str]) -> Refusal | None:
    return _scan_options(
        program,
        args,
        long={"--compress-program": "runs the given program to compress temporary files"},
    )


def _check_rsync(program: str, args: Sequence[str]) -> Refusal | None:
    return _scan_options(
        program,
        args,
        long={
            "--rsh": "runs the given program as the remote shell",
            "--rsync-path": "runs the given command on the remote side",
        },
        short={"e": "runs the given program as the remote shell"},
    )


def _check_zip(program: str, args: Sequence[str]) -> Refusal | None:
    runs = "runs the given command to test the archive"
    return _scan_options(program, args, long={"--unzip-command": runs}, short={"T": runs})


_CHECKS: dict[str, _Check] = {
    "awk": check_awk,
    "fd": _check_fd,
    "fdfind": _check_fd,
    "find": _check_find,
    "gawk": check_awk,
    "git": _check_git,
    "gsed": check_sed,
    "gtar": _check_tar,
    "mawk": check_awk,
    "nawk": check_awk,
    "rg": _check_rg,
    "rsync": _check_rsync,
    "sed": check_sed,
    "sort": _check_sort,
    "tar": _check_tar,
    "zip": _check_zip,
}
