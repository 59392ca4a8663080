"""Refusing the script commands of ``sed`` and ``awk`` that run programs or write files.

Both take a small program as an argument, so checking options is not enough: ``sed 's/x/y/e'``
runs the pattern space as a shell command, ``sed 'w /etc/x'`` writes a file, and ``awk
'BEGIN{system("id")}'`` runs one. The ``sed`` scanner walks the script command by command (GNU
syntax) and refuses what it cannot classify; ``awk`` programs are refused when they mention
``system``, a command pipe (``|``) or ``@load``. Script *files* cannot be checked and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from invokit.builtin.shell._refusal import Refusal

__all__ = ["check_awk", "check_sed"]

_SED_RUNS = "runs the pattern space or the given text as a shell command"
_SED_WRITES = "writes to a file of the caller's choosing"
_SED_FILE = "reads its script from a file, which cannot be checked; pass the script inline"
_SED_SAFE_WRITE_TARGETS = frozenset({"/dev/stdout", "/dev/stderr"})
_SED_PLAIN = frozenset("=dDgGhHnNpPxzF")
_SED_S_FLAGS = frozenset("gpiImMew0123456789 \t")
_ADDRESS_CHARS = frozenset("0123456789$,~+!IM \t")
_MAX_SED_SCRIPT = 16_384
"""Longest sed script checked: the scan walks it in Python, so a longer one is refused."""
_SED_TOO_LONG = (
    f"is a script longer than {_MAX_SED_SCRIPT} characters, too long to check; split the work "
    "into smaller calls"
)


def check_sed(program: str, args: Sequence[str]) -> Refusal | None:
    """Refuse ``sed`` script files and the ``e``, ``w`` and ``W`` commands and flags."""
    scripts: list[str] = []
    positional: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            positional.extend(args[index:])
            break
        if arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if len(name) > 3 and "--expression".startswith(name):
                if not has_value and index < len(args):
                    value, index = args[index], index + 1
                scripts.append(value)
            elif len(name) > 3 and "--file".startswith(name):
                return Refusal(program=program, argument=arg, reason=_SED_FILE)
            elif len(name) > 3 and "--line-length".startswith(name) and not has_value:
                index += 1
        elif arg.startswith("-") and len(arg) > 1:
            for position, letter in enumerate(arg[1:], start=2):
                if letter == "f":
                    return Refusal(program=program, argument=arg, reason=_SED_FILE)
                if letter in "el":
                    # The rest of the word, or else the next word, is the option's value.
                    value = arg[position:]
                    if not value and index < len(args):
                        value, index = args[index], index + 1
                    if letter == "e":
                        scripts.append(value)
                    break
                if letter == "i":
                    break  # the rest of the word is the backup suffix
        else:
            positional.append(arg)
    if not scripts and positional:
        scripts.append(positional[0])
    for script in scripts:
        if len(script) > _MAX_SED_SCRIPT:
            return Refusal(program=program, argument=script, reason=_SED_TOO_LONG)
        found = _scan_sed(script)
        if found is not None:
            return Refusal(program=program, argument=found[0], reason=found[1])
    return None


def _scan_sed(script: str) -> tuple[str, str] | None:
    """The first refused command of a sed script, with the reason."""
    size = len(script)
    index = 0
    while index < size:
        char = script[index]
        if char in " \t\n;{}":
            index += 1
            continue
        if char == "#":
            index = _line_end(script, index)
            continue
        index = _skip_address(script, index)
        if index >= size:
            return None
        command = script[index]
        start = index
        if command == "s":
            flags_at = _skip_delimited(script, index + 1, parts=2)
            if flags_at is None:
                return script[start:], "is a substitution sed cannot parse here"
            index = flags_at
            while index < size and script[index] not in ";\n}#":
                flag = script[index]
                if flag not in _SED_S_FLAGS:
                    return script[start:], "has a substitution flag this check does not know"
                if flag == "e":
                    return script[start : index + 1], _SED_RUNS
                if flag == "w":
                    target = script[index + 1 : _line_end(script, index)].strip()
                    if target not in _SED_SAFE_WRITE_TARGETS:
                        return script[start:], _SED_WRITES
                    index = _line_end(script, index)
                    break
                index += 1
        elif command == "y":
            after = _skip_delimited(script, index + 1, parts=2)
            if after is None:
                return script[start:], "is a transliteration sed cannot parse here"
            index = after
        elif command == "e":
            return script[start : _line_end(script, index)], _SED_RUNS
        elif command in "wW":
            target = script[index + 1 : _line_end(script, index)].strip()
            if target not in _SED_SAFE_WRITE_TARGETS:
                return script[start : _line_end(script, index)], _SED_WRITES
            index = _line_end(script, index)
        elif command in "aicrR":
            index = _text_end(script, index)
        elif command in "bTt:v":
            index = _label_end(script, index + 1)
        elif command in "qQlL":
            index += 1
            while index < size and (script[index].isdigit() or script[index] in " \t"):
                index += 1
        elif command in _SED_PLAIN or command in "{}":
            index += 1
        else:
            return script[start:], "is a sed command this check does not know, so it is refused"
    return None


def _skip_address(script: str, index: int) -> int:
    size = len(script)
    while index < size:
        char = script[index]
        if char in "/\\":
            # A regex address: /re/ or \cREc, where c is any delimiter.
            if char == "\\":
                index += 1
            end = _skip_delimited(script, index, parts=1)
            if end is None:
                return size
            index = end
        elif char in _ADDRESS_CHARS:
            index += 1
        else:
            return index
    return index


def _skip_delimited(script: str, index: int, *, parts: int) -> int | None:
    """Skip ``parts`` delimited fields after the delimiter at ``index``; where the flags begin."""
    if index >= len(script) or script[index] in "\\\n":
        return None
    delimiter = script[index]
    index += 1
    for _ in range(parts):
        while index < len(script) and script[index] != delimiter:
            index += 2 if script[index] == "\\" else 1
        if index >= len(script):
            return None
        index += 1
    return index


def _line_end(script: str, index: int) -> int:
    end = script.find("\n", index)
    return len(script) if end == -1 else end


def _text_end(script: str, index: int) -> int:
    """The end of an ``a``/``i``/``c`` text or an ``r`` file name (a backslash continues it)."""
    while index < len(script) and script[index] != "\n":
        index += 2 if script[index] == "\\" else 1
    return index


def _label_end(script: str, index: int) -> int:
    while index < len(script) and script[index] not in ";\n":
        index += 1
    return index


# -- awk ----------------------------------------------------------------------------------

_AWK_FILE = "reads its program from a file, which cannot be checked; pass the program inline"
_AWK_CODE = "loads code from a file"
_AWK_REFUSED_OPTIONS = {
    "-f": _AWK_FILE,
    "--file": _AWK_FILE,
    "-E": _AWK_FILE,
    "--exec": _AWK_FILE,
    "-i": _AWK_FILE,
    "--include": _AWK_FILE,
    "-l": _AWK_CODE,
    "--load": _AWK_CODE,
}
_AWK_WITH_VALUE = frozenset({"-v", "-F", "--assign", "--field-separator"})
_AWK_SOURCE = frozenset({"-e", "--source"})


def check_awk(program: str, args: Sequence[str]) -> Refusal | None:
    """Refuse ``awk`` program files, extensions, ``system()`` and command pipes."""
    sources: list[str] = []
    positional: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            positional.extend(args[index:])
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, has_value, value = arg.partition("=") if arg.startswith("--") else (arg[:2], "", "")
        if not arg.startswith("--") and len(arg) > 2:
            has_value, value = "=", arg[2:]
        if name in _AWK_REFUSED_OPTIONS:
            return Refusal(program=program, argument=arg, reason=_AWK_REFUSED_OPTIONS[name])
        if name in _AWK_WITH_VALUE | _AWK_SOURCE and not has_value and index < len(args):
            value, index = args[index], index + 1
        if name in _AWK_SOURCE:
            sources.append(value)
    if not sources and positional:
        sources.append(positional[0])
    for source in sources:
        reason = _awk_reason(source)
        if reason is not None:
            return Refusal(program=program, argument=source, reason=reason)
    return None


def _awk_reason(source: str) -> str | None:
    if "system" in source:
        return "calls system(), which runs a shell command"
    if "|" in source.replace("||", ""):
        return "pipes to or from a command (a regex alternative '|' also counts; rewrite it)"
    if "@load" in source:
        return _AWK_CODE
    return None
