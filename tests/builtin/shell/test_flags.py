"""Arguments of allowed programs that run code or write files are refused, with the reason."""

from __future__ import annotations

import pytest

from invokit.builtin.shell._flags import find_refusal


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        # git: configuration, helper programs, outputs and hooks
        pytest.param(["git", "-c", "core.pager=sh", "log"], "-c", id="git-c"),
        pytest.param(["git", "-ccore.pager=sh", "log"], "-ccore.pager=sh", id="git-c-attached"),
        pytest.param(["git", "--config-env=a.b=V", "log"], "--config-env=a.b=V", id="git-cfg-env"),
        pytest.param(["git", "--exec-path=/tmp", "log"], "--exec-path=/tmp", id="git-exec-path"),
        pytest.param(["git", "-C", "/etc", "status"], "-C", id="git-C"),
        pytest.param(["git", "--git-dir=/x", "log"], "--git-dir=/x", id="git-dir"),
        pytest.param(["git", "--work-tree", "/", "status"], "--work-tree", id="git-work-tree"),
        pytest.param(["git", "diff", "--output=/etc/x"], "--output=/etc/x", id="git-output"),
        pytest.param(["git", "log", "--outp=/x"], "--outp=/x", id="git-output-abbrev"),
        pytest.param(["git", "fetch", "--upload-pack=sh x"], "--upload-pack=sh x", id="git-up"),
        pytest.param(["git", "push", "--receive-pack", "x"], "--receive-pack", id="git-receive"),
        pytest.param(["git", "clone", "-u", "sh x", "r"], "-u", id="git-clone-u"),
        pytest.param(["git", "clone", "-c", "a=b", "r"], "-c", id="git-clone-c"),
        pytest.param(["git", "clone", "--template=/t", "r"], "--template=/t", id="git-template"),
        pytest.param(["git", "archive", "--exec=sh", "HEAD"], "--exec=sh", id="git-archive-exec"),
        pytest.param(["git", "rebase", "-x", "make", "main"], "-x", id="git-rebase-x"),
        pytest.param(["git", "rebase", "--exec", "make"], "--exec", id="git-rebase-exec"),
        pytest.param(["git", "grep", "-Ovim", "x"], "-Ovim", id="git-grep-pager"),
        pytest.param(
            ["git", "grep", "--open-files-in-pager", "x"],
            "--open-files-in-pager",
            id="git-grep-pager-long",
        ),
        pytest.param(["git", "diff", "--ext-diff"], "--ext-diff", id="git-ext-diff"),
        pytest.param(["git", "format-patch", "-o", "/x"], "-o", id="git-format-patch-o"),
        pytest.param(["git", "send-email", "--to-cmd=sh"], "--to-cmd=sh", id="git-to-cmd"),
        pytest.param(["git", "filter-branch", "x"], "filter-branch", id="git-filter-branch"),
        pytest.param(["git", "difftool"], "difftool", id="git-difftool"),
        pytest.param(["git", "mergetool"], "mergetool", id="git-mergetool"),
        pytest.param(["git", "submodule", "foreach", "ls"], "foreach", id="git-submodule-foreach"),
        pytest.param(["git", "bisect", "run", "make"], "run", id="git-bisect-run"),
        # search tools
        pytest.param(["rg", "--pre", "sh", "x"], "--pre", id="rg-pre"),
        pytest.param(["rg", "--pre=sh", "x"], "--pre=sh", id="rg-pre-equals"),
        pytest.param(["rg", "--hostname-bin=sh", "x"], "--hostname-bin=sh", id="rg-hostname-bin"),
        pytest.param(["/usr/bin/rg", "--pre", "sh", "x"], "--pre", id="rg-by-path"),
        pytest.param(["find", ".", "-exec", "sh", ";"], "-exec", id="find-exec"),
        pytest.param(["find", ".", "-execdir", "sh", "+"], "-execdir", id="find-execdir"),
        pytest.param(["find", ".", "-ok", "rm", ";"], "-ok", id="find-ok"),
        pytest.param(["find", ".", "-okdir", "rm", ";"], "-okdir", id="find-okdir"),
        pytest.param(["find", ".", "-delete"], "-delete", id="find-delete"),
        pytest.param(["find", ".", "-fprint", "/x"], "-fprint", id="find-fprint"),
        pytest.param(["find", ".", "-fprintf", "/x", "%p"], "-fprintf", id="find-fprintf"),
        pytest.param(["find", ".", "-fls", "/x"], "-fls", id="find-fls"),
        pytest.param(["fd", "-x", "rm"], "-x", id="fd-exec"),
        pytest.param(["fdfind", "--exec-batch", "rm"], "--exec-batch", id="fdfind-exec-batch"),
        # sed scripts
        pytest.param(["sed", "s/a/b/e", "f"], "s/a/b/e", id="sed-s-e-flag"),
        pytest.param(["sed", "-n", "s/a/b/gpe"], "s/a/b/gpe", id="sed-s-flags-e"),
        pytest.param(["sed", "s/a/b/w /etc/x"], "s/a/b/w /etc/x", id="sed-s-w-flag"),
        pytest.param(["sed", "1e id"], "e id", id="sed-e-command"),
        pytest.param(["sed", "-e", "p", "-e", "w out"], "w out", id="sed-w-command"),
        pytest.param(["sed", "--expression=W out"], "W out", id="sed-W-long"),
        pytest.param(["sed", "-ne", "/x/{e ls\n}"], "e ls", id="sed-e-in-block"),
        pytest.param(["sed", "-f", "script.sed"], "-f", id="sed-script-file"),
        pytest.param(["sed", "--file=script.sed"], "--file=script.sed", id="sed-file-long"),
        pytest.param(["sed", "-nf", "script.sed"], "-nf", id="sed-file-bundled"),
        pytest.param(["sed", "s/a/b/;K"], "K", id="sed-unknown-command"),
        pytest.param(["sed", "s/a/b"], "s/a/b", id="sed-unparsable"),
        # awk programs
        pytest.param(["awk", 'BEGIN{system("id")}'], 'BEGIN{system("id")}', id="awk-system"),
        pytest.param(["awk", '{print | "sh"}'], '{print | "sh"}', id="awk-pipe-out"),
        pytest.param(["gawk", '"id" | getline x'], '"id" | getline x', id="gawk-pipe-in"),
        pytest.param(["awk", "-f", "prog.awk"], "-f", id="awk-program-file"),
        pytest.param(["awk", "-e", "BEGIN{system(1)}"], "BEGIN{system(1)}", id="gawk-source"),
        pytest.param(["gawk", "-l", "ext"], "-l", id="gawk-load"),
        pytest.param(["gawk", '@load "x"'], '@load "x"', id="gawk-at-load"),
        # archives and others
        pytest.param(
            ["tar", "-xf", "a.tar", "--to-command=sh"], "--to-command=sh", id="tar-to-cmd"
        ),
        pytest.param(["tar", "--to-comm=sh", "-xf", "a"], "--to-comm=sh", id="tar-abbrev"),
        pytest.param(["tar", "-I", "sh", "-xf", "a"], "-I", id="tar-I"),
        pytest.param(["tar", "xIf", "sh", "a"], "xIf", id="tar-old-style"),
        pytest.param(
            ["tar", "--use-compress-program=sh", "-x"],
            "--use-compress-program=sh",
            id="tar-compress-program",
        ),
        pytest.param(
            ["tar", "-x", "--checkpoint-action=exec=sh"],
            "--checkpoint-action=exec=sh",
            id="tar-checkpoint-action",
        ),
        pytest.param(["tar", "-F", "sh", "-x"], "-F", id="tar-info-script"),
        pytest.param(["sort", "--compress-program=sh", "f"], "--compress-program=sh", id="sort"),
        pytest.param(["rsync", "-e", "sh", "a", "b"], "-e", id="rsync-e"),
        pytest.param(["rsync", "--rsync-path=sh", "a", "b"], "--rsync-path=sh", id="rsync-path"),
        pytest.param(["zip", "-TT", "sh", "a.zip", "x"], "-TT", id="zip-TT"),
        # programs that run the program named in their arguments
        pytest.param(["xargs", "rm"], "rm", id="xargs"),
        pytest.param(["timeout", "5", "rm"], "5", id="timeout"),
        pytest.param(["nice", "rm"], "rm", id="nice"),
        pytest.param(["busybox", "rm", "-rf", "/"], "rm", id="busybox"),
        pytest.param(["env", "A=1", "sh", "-c", "id"], "sh", id="env-command"),
        pytest.param(["env", "-S", "sh -c id"], "-S", id="env-split-string"),
        pytest.param(["env", "-u", "HOME", "sh"], "-u", id="env-unset"),
        pytest.param(["sed", "s/a/b/gX"], "s/a/b/gX", id="sed-unknown-s-flag"),
    ],
)
def test_code_running_argument_is_refused(argv: list[str], argument: str) -> None:
    """Each known code-running or file-writing argument is refused, naming it and why."""
    refusal = find_refusal(argv)
    assert refusal is not None
    assert refusal.argument == argument
    assert refusal.program == argv[0].rsplit("/", 1)[-1]
    assert refusal.reason


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["git", "status"], id="git-status"),
        pytest.param(["git", "--no-pager", "log", "-c"], id="git-log-combined-diff"),
        pytest.param(["git", "diff", "--output-indicator-new=+"], id="git-output-indicator"),
        pytest.param(["git", "--exec-path"], id="git-exec-path-query"),
        pytest.param(["git", "clone", "--depth", "1", "r"], id="git-clone"),
        pytest.param(["git", "cherry-pick", "-x", "abc"], id="git-cherry-pick-x"),
        pytest.param(["git", "log", "--", "-c"], id="git-after-dashdash"),
        pytest.param(["git", "grep", "-n", "foo"], id="git-grep"),
        pytest.param(["rg", "-n", "--", "--pre"], id="rg-pattern-after-dashdash"),
        pytest.param(["rg", "--precise", "x"], id="rg-no-abbreviation"),
        pytest.param(["find", ".", "-name", "*.py", "-print"], id="find-print"),
        pytest.param(["fd", "-e", "py"], id="fd-extension"),
        pytest.param(["sed", "-n", "1,5p", "f"], id="sed-print"),
        pytest.param(["sed", "s/exec/run/g"], id="sed-e-in-pattern"),
        pytest.param(["sed", "s/a/b/w /dev/stdout"], id="sed-w-stdout"),
        pytest.param(["sed", "-i.bak", "-e", "s/a/b/2g;/x/d", "f"], id="sed-in-place"),
        pytest.param(["sed", "/x/{p;q 3}"], id="sed-block"),
        pytest.param(["sed", "y/abc/xyz/;$!N;:a;ta"], id="sed-y-and-labels"),
        pytest.param(["sed", "1i\\\nhello e world"], id="sed-insert-text"),
        pytest.param(["sed", "s|a|b|g # with exec"], id="sed-comment"),
        pytest.param(["awk", "-F:", "{print $1}", "/etc/passwd"], id="awk-print"),
        pytest.param(["awk", "$1 > 5 || $2 < 3"], id="awk-logical-or"),
        pytest.param(["awk", "-v", "x=system", "{print x}"], id="awk-assignment"),
        pytest.param(["tar", "-tzf", "a.tgz"], id="tar-list"),
        pytest.param(["tar", "tzf", "a.tgz"], id="tar-old-style-list"),
        pytest.param(["sort", "-k2", "f"], id="sort"),
        pytest.param(["xargs"], id="xargs-alone"),
        pytest.param(["env"], id="env-alone"),
        pytest.param(["env", "-i", "A=1"], id="env-assignments"),
        pytest.param(["ls", "-la", "--exec"], id="unlisted-program"),
    ],
)
def test_ordinary_use_is_not_refused(argv: list[str]) -> None:
    """Ordinary arguments of the same programs pass, including look-alikes of refused ones."""
    assert find_refusal(argv) is None
