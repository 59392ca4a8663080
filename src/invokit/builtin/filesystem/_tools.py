"""``filesystem(root)``: the ``fs.*`` tools, rooted at one directory.

Every tool resolves its paths through one shared :class:`~._jail.Jail`, declares the permission
requests a policy decides on before anything happens, and runs its blocking work in a worker
thread. Writing tools cancel cleanly: the old file stays intact and no temporary file remains.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from pydantic import Field

from invokit._spec import OutputLimit
from invokit.builtin.filesystem._cancel import StopSignal, run_cancellable
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.builtin.filesystem._preflight import Preflight
from invokit.builtin.filesystem._protected import ProtectedPaths
from invokit.builtin.filesystem._reading import (
    glob_paths,
    list_directory,
    read_file,
    small_file,
    stat_entry,
)
from invokit.builtin.filesystem._results import (
    DeleteResult,
    EditResult,
    FileContent,
    FileStat,
    GlobMatch,
    GlobResult,
    Listing,
    ListingEntry,
    MkdirResult,
    MoveResult,
    SearchMatch,
    SearchResult,
    WriteResult,
)
from invokit.builtin.filesystem._roots import RootedTool
from invokit.builtin.filesystem._search import Engine, SearchQuery, search
from invokit.builtin.filesystem._surfaces import SurfaceGuard
from invokit.builtin.filesystem._walk import walk
from invokit.builtin.filesystem._writing import (
    delete_entry,
    edit_file,
    make_directory,
    move_entry,
    write_file,
)
from invokit.exceptions import AccessDenied, ToolError
from invokit.permissions import FileDelete, FileRead, FileWrite, PermissionRequest
from invokit.registry import ToolRegistry
from invokit.tools import FunctionTool, ToolContext

__all__ = ["filesystem"]

T = TypeVar("T")
Entry = TypeVar("Entry", ListingEntry, GlobMatch, SearchMatch)

Offset = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=1)]
Depth = Annotated[int, Field(ge=1, le=64)]
ResultCap = Annotated[int, Field(ge=1, le=1000)]

_READ_TAGS = ("fs", "read")
DEFAULT_OUTPUT_LIMIT = OutputLimit(max_chars=100_000, mode="head_tail")
"""The executor's default output limit (``Limits.output``), assumed when none is given."""
_WRITE_TAGS = ("fs", "write")


def filesystem(
    root: str | os.PathLike[str],
    *,
    writable: bool = True,
    namespace: str = "fs",
    max_read_bytes: int = 100_000,
    max_entries: int = 1000,
    allow_hard_links: bool = False,
    search_engine: Engine = "auto",
    output_limit: OutputLimit | None = None,
    protected: Iterable[str | os.PathLike[str]] = (),
    absolute_requests: bool = False,
    allow_surfaces: Iterable[str] = (),
) -> ToolRegistry:
    """The filesystem toolset: ``fs.read``, ``fs.list``, ``fs.glob``, ``fs.search``, ``fs.stat``,
    and, when ``writable``, ``fs.write``, ``fs.edit``, ``fs.move``, ``fs.delete``, ``fs.mkdir``.

    Paths the model gives are relative to ``root``; nothing outside it is ever read, written or
    reached, whatever links, hard links, special files or races are in the tree. Defining the
    toolset does no I/O: the root is resolved and opened on the first call.

    Args:
        root: the directory the tools work in (a symbolic link to it is resolved once).
        writable: include the tools that change files.
        namespace: prefix of the tool names.
        max_read_bytes: most bytes ``read`` returns in one call; it says where to continue.
            A page is also kept within the output limit (``output_limit``, or the executor's
            default of 100,000 characters) as the model will see it, JSON escapes included:
            pass ``output_limit`` when the executor's is smaller.
        max_entries: most entries ``list`` and ``glob`` return.
        allow_hard_links: read and replace files that have several hard links (off: such a
            file may be the same as one outside the root).
        search_engine: ``auto`` uses ripgrep when installed; ``python`` never runs it;
            ``ripgrep`` requires it.
        output_limit: the output limit of every tool (``None``: the executor's).
        protected: files and folders inside the root that decide what may run (the CLI's
            ``invokit.toml``, a policy file, a state directory), existing or not; relative
            paths are relative to ``root``. No tool writes, creates, edits, deletes or moves
            one, or a folder that holds one: such a call is refused (``AccessDenied``) in
            preflight, before any policy or person is asked. Reading them stays allowed.
        absolute_requests: name paths absolute in permission requests (``FileRead``,
            ``FileWrite``, ``FileDelete``), so that policy rules, approvals and the audit log
            tell this root's files from another's when several roots are served side by side.
            Tools still take and return root-relative paths.
        allow_surfaces: execution surfaces (root-relative, each with all below it) the tools
            may change after all. Every other change to one (``.git`` and what git finds
            through it, ``.vscode/``, ``.claude/``, ``.envrc`` ...; see ``docs/policy.md``) is
            refused (``AccessDenied``, reason ``execution_surface``) before anyone is asked;
            one of these is marked on its request, so that the policy asks about each change
            (give the policy the same list: ``Policy(allow_surfaces=...)``).
    """
    if max_read_bytes < 1 or max_entries < 1:
        raise ValueError("max_read_bytes and max_entries must be positive")
    if isinstance(allow_surfaces, str):
        raise ValueError("allow_surfaces is a list of paths, not one string")
    jail = Jail(root, allow_hard_links=allow_hard_links)
    checks = Preflight(
        jail,
        ProtectedPaths(root, protected),
        surfaces=SurfaceGuard(root, allow_surfaces),
        absolute=absolute_requests,
    )
    factory = _Factory(namespace=namespace, output_limit=output_limit, jail=jail)
    reader = factory.reader
    # A page of fs.read fits the output limit it will be measured against (the executor's, in
    # the context), so the limit never cuts a result that says it is complete.
    default_chars = (output_limit or DEFAULT_OUTPUT_LIMIT).max_chars

    @reader("read", permissions=checks.reads("content"))
    async def read(
        ctx: ToolContext,
        path: str,
        offset: Offset = 1,
        limit: Count | None = None,
        binary: bool = False,
        column: Offset = 1,
    ) -> FileContent:
        """Read a text file, or a range of its lines.

        Returns at most a fixed number of bytes, cut at a line end; when the file goes on,
        ``next_offset`` is where to continue. A line longer than that is cut inside it: then
        ``next_column`` is set too, and the rest of the line comes with
        ``offset=next_offset, column=next_column``. Files with NUL bytes are refused unless
        ``binary`` is set.

        Args:
            path: the file, relative to the root directory.
            offset: the first line to return (1-based).
            limit: how many lines to return (default: as many as fit).
            binary: return the file's first bytes base64-encoded, even if it is not text.
            column: the character of line ``offset`` to start from (1-based): a result's
                ``next_column``.
        """
        call = functools.partial(
            read_file,
            jail,
            path,
            offset=offset,
            column=column,
            limit=limit,
            max_bytes=max_read_bytes,
            max_chars=ctx.output_limit.max_chars if ctx.output_limit else default_chars,
            binary=binary,
        )
        if small_file(jail, path):  # a thread hop would cost more than the read
            return call()
        return await _abandonable(call)

    @reader("list", permissions=checks.reads("directory", default="."))
    async def list_(
        ctx: ToolContext, path: str = ".", recursive: bool = False, max_depth: Depth = 3
    ) -> Listing:
        """List a directory's entries (files, directories, links), sorted by name.

        Links are shown as links and never entered.

        Args:
            path: the directory, relative to the root directory.
            recursive: also list subdirectories, depth first.
            max_depth: how many levels to descend when recursive.
        """
        call = functools.partial(
            list_directory,
            jail,
            path,
            recursive=recursive,
            max_depth=max_depth,
            max_entries=max_entries,
        )
        listing = await _abandonable(call)
        return replace(listing, entries=_permitted(ctx, checks, listing.entries))

    @reader("glob", permissions=checks.reads("directory", default="."))
    async def glob(
        ctx: ToolContext, pattern: str, path: str = ".", include_ignored: bool = False
    ) -> GlobResult:
        """Find files and directories whose path matches a glob pattern, sorted.

        ``*`` and ``?`` stay within one path component, ``**`` spans any number of
        directories, ``[abc]`` and ``{py,pyi}`` choose. Example: ``src/**/*.py``. What the
        project's .gitignore/.ignore files leave out (and .git) is skipped unless
        ``include_ignored`` is true.

        Args:
            pattern: the glob, relative to ``path``.
            path: the directory to search in, relative to the root directory.
            include_ignored: also match what ignore files (.gitignore, .ignore) leave out.
        """
        call = functools.partial(
            glob_paths,
            jail,
            pattern,
            path,
            max_results=max_entries,
            include_ignored=include_ignored,
        )
        found = await _abandonable(call)
        return replace(found, matches=_permitted(ctx, checks, found.matches))

    @reader("search", permissions=checks.reads("directory", default="."))
    async def search_(
        ctx: ToolContext,
        pattern: str,
        path: str = ".",
        include: str | None = None,
        ignore_case: bool = False,
        max_results: ResultCap = 100,
        include_ignored: bool = False,
    ) -> SearchResult:
        """Search file contents for a regular expression; returns matching lines, sorted.

        Matching is per line. Binary content, the .git, .hg and .svn directories, and what
        the project's .gitignore/.ignore files leave out are skipped (``include_ignored``
        searches ignored files too).

        Args:
            pattern: a regular expression (Python / Rust syntax, e.g. ``def \\w+\\(``).
            path: the directory or file to search, relative to the root directory.
            include: only files whose name matches this glob (``*.py``), or whose path does,
                when it contains a ``/``.
            ignore_case: match regardless of case.
            max_results: the most matching lines to return.
            include_ignored: also search what ignore files (.gitignore, .ignore) leave out.
        """
        # The query is checked (its include glob compiled) in the worker thread, never on the
        # event loop; the pattern is compiled only in ripgrep's or the Python engine's process.
        query = functools.partial(
            SearchQuery,
            pattern=pattern,
            base=split_relative(path),
            include=include,
            ignore_case=ignore_case,
            max_results=max_results,
            include_ignored=include_ignored,
        )
        found = await run_cancellable(
            functools.partial(_search_with_stop, jail, query, search_engine)
        )
        return replace(found, matches=_permitted(ctx, checks, found.matches))

    @reader("stat", permissions=checks.reads("entry"))
    async def stat(path: str) -> FileStat:
        """Describe one entry: its type, size, modification time, permissions and links.

        A link is described as a link, not followed.

        Args:
            path: the entry, relative to the root directory.
        """
        return await _abandonable(functools.partial(stat_entry, jail, path))

    tools: list[FunctionTool] = [read, list_, glob, search_, stat]
    if writable:
        writers = _writers(jail, factory, checks)
        for writer in writers:
            writer._writable_roots = (Path(jail.root),)
        tools += writers
    return ToolRegistry(tools)


def _writers(jail: Jail, factory: _Factory, checks: Preflight) -> list[FunctionTool]:
    writer = factory.writer

    @writer(
        "write",
        idempotent=True,
        permissions=checks.writes("content", "write"),
    )
    async def write(path: str, content: str, create_parents: bool = False) -> WriteResult:
        """Create a file, or replace its whole content.

        The file is replaced atomically: readers see the old content or the new, never a mix.
        Use ``edit`` to change part of a file.

        Args:
            path: the file, relative to the root directory.
            content: the complete new content (UTF-8 text).
            create_parents: make missing parent directories.
        """
        checks.check_change(path, "write")
        call = functools.partial(write_file, jail, path, content, create_parents=create_parents)
        return await run_cancellable(lambda stop: call(stop=stop))

    @writer(
        "edit",
        idempotent=False,
        permissions=checks.writes("content", "edit", read_too=True),
    )
    async def edit(
        path: str, old_text: str, new_text: str, replace_all: bool = False
    ) -> EditResult:
        """Replace exact text in a file and return the unified diff of the change.

        ``old_text`` must occur exactly once (copy it from the file with enough surrounding
        lines to be unique), unless ``replace_all`` is set.

        Args:
            path: the file, relative to the root directory.
            old_text: the exact text to replace, whitespace included.
            new_text: the text to put in its place.
            replace_all: replace every occurrence.
        """
        checks.check_change(path, "edit")
        call = functools.partial(edit_file, jail, path, old_text, new_text, replace_all=replace_all)
        return await run_cancellable(lambda stop: call(stop=stop))

    @writer(
        "move",
        idempotent=False,
        permissions=checks.moves(),
    )
    async def move(
        ctx: ToolContext,
        path: str,
        destination: str,
        overwrite: bool = False,
        create_parents: bool = False,
    ) -> MoveResult:
        """Move or rename a file, directory or link within the root directory.

        Args:
            path: what to move, relative to the root directory.
            destination: its new path, relative to the root directory.
            overwrite: replace an existing entry at ``destination``.
            create_parents: make missing parent directories of ``destination``.
        """
        checks.check_change(path, "move away")
        checks.check_change(destination, "move onto")
        call = functools.partial(
            move_entry,
            jail,
            path,
            destination,
            overwrite=overwrite,
            create_parents=create_parents,
        )

        def checked() -> MoveResult:
            # A rule about something inside the folder must hold for the folder as a whole.
            _check_subtree(
                jail, ctx, path, lambda sub: [FileDelete(path=checks.named(sub))], "move"
            )
            _check_subtree(
                jail,
                ctx,
                path,
                lambda sub: [FileWrite(path=checks.named(_rebase(sub, path, destination)))],
                "move",
            )
            return call()

        return await anyio.to_thread.run_sync(checked)

    @writer("delete", idempotent=True, permissions=checks.deletes())
    async def delete(ctx: ToolContext, path: str, recursive: bool = False) -> DeleteResult:
        """Delete a file, a link (not what it points to), or a directory.

        Args:
            path: what to delete, relative to the root directory.
            recursive: delete a non-empty directory with everything in it.
        """
        checks.check_change(path, "delete")
        call = functools.partial(delete_entry, jail, path, recursive=recursive)

        def checked() -> DeleteResult:
            if recursive:
                _check_subtree(
                    jail, ctx, path, lambda sub: [FileDelete(path=checks.named(sub))], "delete"
                )
            return call()

        return await anyio.to_thread.run_sync(checked)

    @writer(
        "mkdir",
        idempotent=True,
        destructive=False,
        permissions=checks.writes("directory", "create"),
    )
    async def mkdir(path: str) -> MkdirResult:
        """Make a directory, and any missing parents; an existing directory is fine.

        Args:
            path: the directory, relative to the root directory.
        """
        checks.check_change(path, "create")
        return await anyio.to_thread.run_sync(functools.partial(make_directory, jail, path))

    return [write, edit, move, delete, mkdir]


class _Factory:
    """Builds the tools with the toolset's shared options and honest hints."""

    def __init__(self, *, namespace: str, output_limit: OutputLimit | None, jail: Jail) -> None:
        self.namespace = namespace
        self.output_limit = output_limit
        self.jail = jail

    def _tool(self, **options: Any) -> Callable[[Callable[..., Any]], FunctionTool]:
        # Every tool also keeps to the caller's client roots (MCP roots), in preflight.
        return lambda fn: RootedTool(fn, jail=self.jail, **options)

    def reader(
        self, name: str, *, permissions: Callable[[Mapping[str, Any]], list[PermissionRequest]]
    ) -> Callable[[Callable[..., Any]], FunctionTool]:
        return self._tool(
            name=f"{self.namespace}.{name}",
            read_only=True,
            destructive=False,
            idempotent=True,
            open_world=False,
            tags=_READ_TAGS,
            category="filesystem",
            output_limit=self.output_limit,
            permissions=permissions,
        )

    def writer(
        self,
        name: str,
        *,
        idempotent: bool,
        permissions: Callable[[Mapping[str, Any]], list[PermissionRequest]],
        destructive: bool = True,
    ) -> Callable[[Callable[..., Any]], FunctionTool]:
        return self._tool(
            name=f"{self.namespace}.{name}",
            read_only=False,
            destructive=destructive,
            idempotent=idempotent,
            open_world=False,
            tags=_WRITE_TAGS,
            category="filesystem",
            output_limit=self.output_limit,
            permissions=permissions,
        )


def _check_subtree(
    jail: Jail,
    ctx: ToolContext,
    path: str,
    requests: Callable[[str], list[PermissionRequest]],
    action: str,
) -> None:
    """Refuse to ``action`` a directory when the policy in force would not let this call touch
    everything in it (a deny rule on ``config/secrets/**`` also protects ``config``)."""
    try:
        start = split_relative(path)
        refused = next(
            (
                (entry.path, request)
                for entry in walk(jail, start)
                for request in requests(entry.path)
                if not ctx.permits(request)
            ),
            None,
        )
    except ToolError:
        return  # not a directory, a link, unreadable: the operation itself says what is wrong
    if refused is not None:
        inner, request = refused
        raise AccessDenied(
            f"Cannot {action} {display(start)!r}: it contains {inner!r}, which the policy "
            f"does not let this call touch ({request.kind})",
            data={"reason": "policy_protects_contents", "path": inner},
        )


def _rebase(sub: str, source: str, destination: str) -> str:
    """Where ``sub`` (a path below ``source``) lands when ``source`` moves to ``destination``."""
    prefix = display(split_relative(source))
    rest = sub[len(prefix) :].lstrip("/") if prefix != "." else sub
    target = _norm(destination)
    return f"{target}/{rest}" if rest else target


def _norm(path: Any) -> str:
    """The canonical form of a path for permission requests; a bad path is passed as given
    (the tool refuses it with the reason)."""
    if not isinstance(path, str):
        return str(path)
    try:
        return display(split_relative(path))
    except AccessDenied:
        return path


def _permitted(ctx: ToolContext, checks: Preflight, items: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """Leave out what the policy's deny rules forbid reading: a recursive listing, glob or
    search reaches files its single declared ``FileRead`` could not name up front."""
    return tuple(item for item in items if ctx.permits(FileRead(path=checks.named(item.path))))


async def _abandonable(call: Callable[[], T]) -> T:
    # Read-only work changes nothing, so a cancelled call may simply be left to finish.
    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


def _search_with_stop(
    jail: Jail, query: Callable[[], SearchQuery], engine: Engine, stop: StopSignal
) -> SearchResult:
    return search(jail, query(), engine=engine, stop=stop)
