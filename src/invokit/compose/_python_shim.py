"""The program that runs inside the sandbox for :class:`~invokit.compose.PythonSandbox`.

It is sent to ``python -I -S -c`` as text: it reads the setup from stdin, installs the seccomp
filter that refuses ``exec`` (built by the host; see :mod:`invokit.compose._confine`), limits
itself (memory, CPU time, no new processes), then runs the script, and
speaks one JSON message per line with the host: ``{"call": ...}`` for a tool call (answered
with ``{"value": ...}`` or ``{"raise": type, "message": ...}``), ``{"print": text}`` and finally
``{"done": value}`` or ``{"error": type, "message": ..., "line": n}``.
"""

SHIM = r"""
import ast, builtins, json, os, resource, sys, traceback
proto_in = os.fdopen(0, "r", encoding="utf-8")
proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
def send(message):
    proto_out.write(json.dumps(message) + "\n")
    proto_out.flush()
setup = json.loads(proto_in.readline())
def confine(program):
    # Before any script code: a seccomp filter stays for the life of the process.
    import ctypes
    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    code = ctypes.create_string_buffer(program, len(program))
    libc = ctypes.CDLL(None, use_errno=True)
    fprog = Program(len(program) // 8, ctypes.addressof(code))
    # PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with SECCOMP_MODE_FILTER
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")
if setup.get("seccomp"):
    import base64
    try:
        confine(base64.b64decode(setup["seccomp"]))
    except BaseException as exc:
        send({"error": "RuntimeError", "message": "the sandbox could not be set up: " + str(exc)})
        raise SystemExit(1)
memory, seconds = setup["memory"], setup["seconds"]
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
class Printer:
    def write(self, text):
        if text:
            send({"print": text})
        return len(text)
    def flush(self):
        pass
sys.stdout = sys.stderr = Printer()
FORBIDDEN = ("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork", "socket.", "pty.", "ctypes.")
# _posixsubprocess.fork_exec starts a process without an audit event of its own, and
# RLIMIT_NPROC does not hold for root: the module may not be imported, under any package
# name (an extension module is initialised by the last part of its name).
NO_IMPORT = ("_posixsubprocess",)
def audit(event, args):
    if event.startswith(FORBIDDEN) or event == "os.fork" or (
        event == "import" and args and str(args[0]).rpartition(".")[2] in NO_IMPORT
    ):
        name = event if event != "import" else "import " + str(args[0])
        raise PermissionError(name + " is not available in a compose script; call a tool instead")
sys.addaudithook(audit)
def function(name, params):
    def call(*args, **kwargs):
        try:
            message = json.dumps({"call": name, "args": list(args), "kwargs": kwargs})
        except RecursionError:
            raise ValueError("invalid_arguments: the arguments nest too deeply to send") from None
        proto_out.write(message + "\n")
        proto_out.flush()
        reply = json.loads(proto_in.readline())
        if "raise" in reply:
            kind = getattr(builtins, reply["raise"], RuntimeError)
            raise kind(reply["message"])
        return reply["value"]
    call.__name__ = name
    return call
namespace = {"__name__": "__script__"}
for name, params in setup["functions"].items():
    namespace[name] = function(name, params)
def line_of(exc):
    line = None
    for frame, number in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == "script.py":
            line = number
    return line if line is not None else getattr(exc, "lineno", None)
try:
    tree = ast.parse(setup["code"], "script.py")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "script.py", "exec"), namespace)
    value = eval(compile(last, "script.py", "eval"), namespace) if last is not None else None
    try:
        send({"done": value})
    except TypeError:
        send({"done": repr(value)})
except BaseException as exc:
    send({"error": type(exc).__name__, "message": str(exc), "line": line_of(exc)})
"""
