"""Every exception invokit raises, in one hierarchy.

Two channels, as in the MCP SDK: a failure *inside a tool* becomes an error result the model
reads (the executor translates :class:`ToolError` and any other exception in one place);
*misuse* of the library (a bad definition, a duplicate name, an unparsable policy) raises.

::

    InvokitError
    ├── DefinitionError
    │   ├── InvalidToolDefinition        bad name, schema or option when a tool is defined
    │   ├── DuplicateToolName            two tools with one name in a registry
    │   └── UnsupportedSchema            a schema a provider cannot represent (keyword named)
    ├── ArgumentsError                   a tool call's arguments are unusable
    │   ├── MalformedArguments           not valid JSON (position given)
    │   │   └── ArgumentsTooLarge        over a size bound: bytes, values or depth (bound given)
    │   └── InvalidArguments             valid JSON that breaks the schema (every issue listed)
    ├── NotJsonSafe                      a value that has no JSON form (type and path given)
    ├── ToolError                        raised by tool bodies; becomes an error result
    │   ├── ToolFailed                   the tool chose to fail, with a kind and a message
    │   ├── RetryWithFeedback            the model should fix its call and try again
    │   ├── AccessDenied                 a guard inside the tool refused (kind "denied")
    │   ├── AuthRequired                 the tool needs credentials (an interrupt)
    │   └── ChildInterrupted             a call the tool made through the executor waits
    ├── PolicyError                      a policy that cannot be loaded (never a silent allow)
    ├── ApprovalError                    resuming an approval that cannot be used
    │   ├── ApprovalNotFound
    │   ├── ApprovalExpired
    │   ├── ApprovalMismatch             bound to another call, tool or spec version
    │   ├── ApprovalAlreadyUsed
    │   └── ApprovalNotPermitted         this person may not approve it (approvers, four eyes)
    ├── MCPConnectionError               an MCP server did not start, answer in time, or went away
    └── MissingExtra (also ImportError)  an optional dependency is not installed
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "AccessDenied",
    "ApprovalAlreadyUsed",
    "ApprovalError",
    "ApprovalExpired",
    "ApprovalMismatch",
    "ApprovalNotFound",
    "ApprovalNotPermitted",
    "ArgumentIssue",
    "ArgumentsError",
    "ArgumentsTooLarge",
    "AuthRequired",
    "ChildInterrupted",
    "DefinitionError",
    "DuplicateToolName",
    "InvalidArguments",
    "InvalidToolDefinition",
    "InvokitError",
    "MCPConnectionError",
    "MalformedArguments",
    "MissingExtra",
    "NotJsonSafe",
    "PolicyError",
    "RetryWithFeedback",
    "ToolError",
    "ToolFailed",
    "UnsupportedSchema",
]


class InvokitError(Exception):
    """Base of every exception invokit raises."""


# -- definition ---------------------------------------------------------------------------


class DefinitionError(InvokitError):
    """A tool or registry was defined wrongly; raised at definition time."""


class InvalidToolDefinition(DefinitionError, ValueError):
    """A tool definition breaks a rule (name, schema, option).

    Attributes:
        rule: the rule that was broken, in words.
        value: the offending value.
    """

    def __init__(self, rule: str, value: object = None, *, tool: str | None = None) -> None:
        self.rule = rule
        self.value = value
        self.tool = tool
        where = f"tool {tool!r}: " if tool else ""
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"{where}{rule}{shown}")


class DuplicateToolName(DefinitionError, ValueError):
    """Two tools share a name in one registry.

    Attributes:
        name: the shared name.
        sources: where each of the two came from.
    """

    def __init__(self, name: str, sources: tuple[str, str]) -> None:
        self.name = name
        self.sources = sources
        super().__init__(
            f"Duplicate tool name {name!r}: defined by {sources[0]} and by {sources[1]}. "
            "Rename one (registry.renamed({...})), namespace one (registry.prefixed('ns')), "
            "or merge with conflicts='first_wins' or 'last_wins'."
        )


class UnsupportedSchema(DefinitionError, ValueError):
    """A tool's schema cannot be represented for a provider; lowering never guesses.

    Attributes:
        provider: the provider (``openai-strict``, ``gemini`` …).
        tool: the tool's invokit name.
        path: JSON pointer into the tool's input schema.
        keyword: the keyword that cannot be represented.
        reason: why, and what to do instead.
    """

    def __init__(self, *, provider: str, tool: str, path: str, keyword: str, reason: str) -> None:
        self.provider = provider
        self.tool = tool
        self.path = path
        self.keyword = keyword
        self.reason = reason
        super().__init__(
            f"tool {tool!r}: {keyword!r} at {path or '/'} cannot be represented for {provider}: "
            f"{reason}"
        )


# -- arguments ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class ArgumentIssue:
    """One problem with a call's arguments."""

    path: str
    """JSON pointer to the offending value (``""`` is the whole object)."""
    message: str
    """What is wrong, in words a model can act on."""
    expected: str | None = None
    """What the schema wants there, when known."""
    actual: str | None = None
    """A short rendering of what was given, when there was a value."""

    def render(self) -> str:
        where = self.path or "(root)"
        text = f"{where}: {self.message}"
        if self.actual is not None and self.actual not in self.message:
            text += f" (got {self.actual})"
        return text


class ArgumentsError(InvokitError, ValueError):
    """A call's arguments are unusable; the executor reports it as ``invalid_arguments``."""

    issues: tuple[ArgumentIssue, ...] = ()


class MalformedArguments(ArgumentsError):
    """The arguments are not acceptable JSON.

    Attributes:
        reason: what is wrong.
        position: character offset into the text, when known.
    """

    def __init__(self, reason: str, *, position: int | None = None) -> None:
        self.reason = reason
        self.position = position
        self.issues = (ArgumentIssue(path="", message=reason),)
        at = "" if position is None else f" at position {position}"
        super().__init__(f"Arguments are malformed JSON{at}: {reason}")


class ArgumentsTooLarge(MalformedArguments):
    """The arguments are over one of the executor's size bounds; well-formed or not, they are
    read no further. A :class:`MalformedArguments`, so code that catches that one catches this.

    Attributes:
        bound: which bound: ``"bytes"`` (of JSON text), ``"values"`` (array items and object
            members, every level together) or ``"depth"`` (nesting levels).
        limit: the bound's value.
        size: how many bytes the text has (for ``"bytes"``; ``None`` for the others, which
            stop counting at the bound).
    """

    def __init__(
        self, bound: Literal["bytes", "values", "depth"], limit: int, *, size: int | None = None
    ) -> None:
        self.bound = bound
        self.limit = limit
        self.size = size
        if bound == "bytes":
            reason = (
                f"{size} bytes of JSON, over the limit of {limit} bytes; "
                "send less (a smaller piece at a time)"
            )
        elif bound == "values":
            reason = (
                f"more than {limit} values (array items and object members); send fewer at a time"
            )
        else:
            reason = f"nesting is deeper than {limit} levels"
        self.reason = reason
        self.position = None
        self.issues = (ArgumentIssue(path="", message=reason),)
        Exception.__init__(self, f"Arguments are too large: {reason}")


class InvalidArguments(ArgumentsError):
    """The arguments are JSON but break the tool's input schema.

    Attributes:
        issues: the problems found, each with its JSON pointer (the first ones, when
            there are very many).
        more: how many more problems there are beyond ``issues``.
        complete: False when the arguments were too large to look for every problem: only
            the first was looked for, and more may exist.
    """

    def __init__(
        self, issues: Sequence[ArgumentIssue], *, more: int = 0, complete: bool = True
    ) -> None:
        self.issues = tuple(issues)
        self.more = more
        self.complete = complete
        lines = "; ".join([issue.render() for issue in self.issues])
        if complete:
            count = len(self.issues) + more
            noun = "problem" if count == 1 else "problems"
            rest = f"; and {more} more" if more else ""
        else:
            noun = "the first problem; the arguments are too large to list every one"
            count, rest = None, "; more may exist"
        head = f"{count} {noun}" if count is not None else noun
        super().__init__(f"Arguments do not match the input schema ({head}): {lines}{rest}")


class NotJsonSafe(InvokitError, TypeError):
    """A value has no JSON form.

    Attributes:
        type_name: the offending type's qualified name.
        path: JSON pointer to the value inside the whole.
    """

    def __init__(self, type_name: str, path: str) -> None:
        self.type_name = type_name
        self.path = path
        super().__init__(
            f"Value of type {type_name} at {path or '(root)'} cannot be converted to JSON; "
            "return str, int, float, bool, None, lists, dicts, dataclasses or pydantic models"
        )


# -- raised by tool bodies ----------------------------------------------------------------


class ToolError(InvokitError):
    """Raised inside a tool to fail the call with a result the model can read.

    Attributes:
        kind: the error kind the host branches on.
        message: what the model is told.
        data: optional structured detail, kept in the result's ``structured`` value.
    """

    kind: str = "execution_failed"

    def __init__(self, message: str, *, kind: str | None = None, data: Any = None) -> None:
        self.message = message
        if kind is not None:
            self.kind = kind
        self.data = data
        super().__init__(message)


class ToolFailed(ToolError):
    """The tool failed and says why; the model should not simply retry the same call."""


class RetryWithFeedback(ToolError):
    """The call was wrong in a way the model can fix; the message says how."""

    kind = "retry"


class AccessDenied(ToolError):
    """A guard inside the tool refused the call (a path outside the root, a forbidden flag)."""

    kind = "denied"


class AuthRequired(ToolError):
    """The tool needs credentials; the executor turns this into an interrupt.

    Attributes:
        provider: who issues the credentials (``"github"``).
        scopes: what access is needed.
        challenge: anything the host needs to start the flow (a URL, a nonce).
    """

    kind = "auth_required"

    def __init__(
        self,
        provider: str,
        scopes: Sequence[str] = (),
        challenge: Mapping[str, Any] | None = None,
    ) -> None:
        self.provider = provider
        self.scopes = tuple(scopes)
        self.challenge = dict(challenge or {})
        wanted = f" (scopes: {', '.join(self.scopes)})" if self.scopes else ""
        super().__init__(f"Authorization with {provider} is required{wanted}")


class ChildInterrupted(ToolError):
    """A call the tool made through the executor (a compose script's child) waits for a
    person: the executor hands out that interrupt as the outcome of the tool's own call.

    Attributes:
        interrupt: the child's interrupt (an ``ApprovalRequired``).
    """

    kind = "interrupted"

    def __init__(self, interrupt: Any) -> None:
        self.interrupt = interrupt
        super().__init__(f"A call made by this tool waits: {interrupt.id}")


# -- policy and approvals -----------------------------------------------------------------


class PolicyError(InvokitError, ValueError):
    """A policy could not be loaded; it is never treated as allow-all.

    Attributes:
        source: the file or text it came from.
        line: the line at fault, when known.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = source or "policy"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {message}")


class ApprovalError(InvokitError):
    """An approval cannot be used as asked.

    Attributes:
        approval_id: the approval concerned.
    """

    def __init__(self, approval_id: str, detail: str) -> None:
        self.approval_id = approval_id
        self.detail = detail
        super().__init__(f"approval {approval_id}: {detail}")


class ApprovalNotFound(ApprovalError):
    """No pending approval has that id."""


class ApprovalExpired(ApprovalError):
    """The approval's time ran out; it counts as denied."""


class ApprovalMismatch(ApprovalError):
    """The approval is bound to another call, tool, spec version or arguments."""


class ApprovalAlreadyUsed(ApprovalError):
    """The approval was resolved or consumed already; it is single-use."""


class ApprovalNotPermitted(ApprovalError):
    """The person deciding may not approve this request: the policy names other approvers,
    or requires four eyes and they are the identity whose agent asked. Nothing is recorded."""


# -- connections -------------------------------------------------------------------------


class MCPConnectionError(InvokitError):
    """An MCP server could not be started, reached or initialized in time.

    Attributes:
        server: the toolset's server name.
        detail: what went wrong, in words.
    """

    def __init__(self, server: str, detail: str) -> None:
        self.server = server
        self.detail = detail
        super().__init__(f"MCP server {server!r}: {detail}")


# -- environment --------------------------------------------------------------------------


class MissingExtra(InvokitError, ImportError):
    """An optional dependency is needed.

    Attributes:
        extra: the extra that provides it.
    """

    def __init__(self, feature: str, extra: str) -> None:
        self.extra = extra
        super().__init__(f'{feature} needs an optional dependency: pip install "invokit[{extra}]"')
