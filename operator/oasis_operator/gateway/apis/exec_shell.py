"""The answer of a command the scenario declares no answer for, drawn only from what the container sees.

No container runs in the sandbox (kwok plays the kubelets) and nothing is ever run on the operator's
machine: a granted `kubectl exec` is answered from the pod's own objects. `ContainerView` holds what a
container would see (its environment, resolved from the pod spec and the ConfigMaps and Secrets it
names; the files mounted from ConfigMap and Secret volumes; its hostname), and `answer` plays a handful
of commands over it: `env`, `printenv [VAR…]`, `cat`, `ls`, `hostname`, `echo`, `true`, `false`, and
`sh -c '<those, joined by ; && ||>'`. Anything else is what the container runtime says of a program the
image does not have.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

# The image's search path, as most base images set it (what `env` shows besides the declared variables).
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHELLS = frozenset({"sh", "bash", "ash", "dash"})
NOT_FOUND_EXIT = 127


@dataclass(frozen=True)
class ContainerView:
    """What one container of a pod sees: its hostname, environment (in order) and mounted files."""

    hostname: str
    env: tuple[tuple[str, str], ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # absolute path -> content

    def environment(self) -> dict[str, str]:
        """The process environment: the runtime's PATH and HOSTNAME, then the container's own."""
        out = {"PATH": IMAGE_PATH, "HOSTNAME": self.hostname}
        out.update(self.env)
        out.setdefault("HOME", "/root")
        return out

    def directories(self) -> set[str]:
        """Every directory that holds a mounted file (and its ancestors)."""
        dirs = {"/"}
        for path in self.files:
            parent = posixpath.dirname(path)
            while parent not in dirs:
                dirs.add(parent)
                parent = posixpath.dirname(parent)
        return dirs


@dataclass(frozen=True)
class ExecResult:
    """What the command printed and how it ended."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0

    def then(self, other: ExecResult) -> ExecResult:
        return ExecResult(self.stdout + other.stdout, self.stderr + other.stderr, other.exit_code)


def runtime_not_found(program: str) -> ExecResult:
    """containerd's answer for a program the image lacks, as `kubectl exec` shows it."""
    reason = (
        f"stat {program}: no such file or directory"
        if program.startswith("/")
        else "executable file not found in $PATH"
    )
    message = (
        "OCI runtime exec failed: exec failed: unable to start container process: "
        f'exec: "{program}": {reason}: unknown\n'
    )
    return ExecResult(stdout=message, exit_code=NOT_FOUND_EXIT)


def answer(argv: tuple[str, ...], view: ContainerView) -> ExecResult:
    """The result of running `argv` in the container `view` describes (the runtime's error if unknown)."""
    if not argv:
        return runtime_not_found("")
    program = posixpath.basename(argv[0])
    if program in SHELLS:
        return _shell(argv, view)
    result = _builtin(program, argv[1:], view)
    return result if result is not None else runtime_not_found(argv[0])


def _shell(argv: tuple[str, ...], view: ContainerView) -> ExecResult:
    shell = posixpath.basename(argv[0])
    if len(argv) < 3 or argv[1] != "-c":
        # An interactive shell with no terminal reads its stdin, which nobody writes: it ends at once.
        return ExecResult()
    try:
        lexer = shlex.shlex(argv[2], posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return ExecResult(stderr=f"{shell}: 1: Syntax error: Unterminated quoted string\n", exit_code=2)
    result = ExecResult()
    command: list[str] = []
    skip = False
    for word in [*words, ";"]:
        if word not in {";", "&&", "||", "|"}:
            command.append(word)
            continue
        if command and not skip:
            result = result.then(_in_shell(shell, tuple(command), view))
        command = []
        skip = (word == "&&" and result.exit_code != 0) or (word == "||" and result.exit_code == 0)
    return result


def _in_shell(shell: str, argv: tuple[str, ...], view: ContainerView) -> ExecResult:
    found = _builtin(posixpath.basename(argv[0]), argv[1:], view)
    if found is not None:
        return found
    return ExecResult(stderr=f"{shell}: 1: {argv[0]}: not found\n", exit_code=NOT_FOUND_EXIT)


def _builtin(program: str, args: tuple[str, ...], view: ContainerView) -> ExecResult | None:
    if program in {"env", "printenv"}:
        return _env(program, args, view)
    if program == "cat":
        return _cat(args, view)
    if program == "ls":
        return _ls(args, view)
    if program == "hostname":
        return ExecResult(stdout=view.hostname + "\n")
    if program == "echo":
        newline = not (args and args[0] == "-n")
        words = args[1:] if not newline else args
        return ExecResult(stdout=" ".join(words) + ("\n" if newline else ""))
    if program in {"true", "false"}:
        return ExecResult(exit_code=int(program == "false"))
    return None


def _env(program: str, args: tuple[str, ...], view: ContainerView) -> ExecResult:
    environment = view.environment()
    if program == "printenv":
        if not args:
            return ExecResult(stdout="".join(f"{k}={v}\n" for k, v in environment.items()))
        values = [environment[name] for name in args if name in environment]
        return ExecResult(stdout="".join(v + "\n" for v in values), exit_code=int(len(values) < len(args)))
    assignments = {}
    rest = list(args)
    while rest and "=" in rest[0] and not rest[0].startswith("="):
        key, _, value = rest.pop(0).partition("=")
        assignments[key] = value
    if rest:
        inner = ContainerView(view.hostname, (*view.env, *assignments.items()), view.files)
        return answer(tuple(rest), inner)
    environment.update(assignments)
    return ExecResult(stdout="".join(f"{k}={v}\n" for k, v in environment.items()))


def _absolute(path: str) -> str:
    return posixpath.normpath(posixpath.join("/", path))


def _cat(args: tuple[str, ...], view: ContainerView) -> ExecResult:
    result = ExecResult()
    for name in (a for a in args if a != "--"):
        path = _absolute(name)
        if path == "/etc/hostname":
            result = result.then(ExecResult(stdout=view.hostname + "\n"))
        elif path in view.files:
            result = result.then(ExecResult(stdout=view.files[path]))
        elif path in view.directories():
            result = result.then(ExecResult(stderr=f"cat: {name}: Is a directory\n", exit_code=1))
        else:
            result = result.then(ExecResult(stderr=f"cat: {name}: No such file or directory\n", exit_code=1))
    failed = any(line for line in result.stderr.splitlines())
    return ExecResult(result.stdout, result.stderr, int(failed))


def _ls(args: tuple[str, ...], view: ContainerView) -> ExecResult:
    flags = "".join(a[1:] for a in args if a.startswith("-") and a != "-")
    names = [a for a in args if not a.startswith("-") or a == "-"] or ["."]
    dirs = view.directories()
    out, err = [], []
    for name in names:
        path = _absolute(name)
        if path in view.files:
            out.append((name, [name]))
        elif path in dirs:
            children = {
                p[len(path.rstrip("/")) + 1 :].split("/", 1)[0]
                for p in (*view.files, *dirs)
                if p != path and p.startswith(path.rstrip("/") + "/")
            }
            shown = sorted(c for c in children if "a" in flags or not c.startswith("."))
            out.append((name, shown))
        else:
            err.append(f"ls: cannot access '{name}': No such file or directory\n")
    many = len(out) + len(err) > 1
    text = "\n".join(
        (f"{name}:\n" if many else "") + "".join(entry + "\n" for entry in entries) for name, entries in out
    )
    return ExecResult(stdout=text, stderr="".join(err), exit_code=2 if err else 0)


def command_line(argv: tuple[str, ...]) -> str:
    """`argv` as a shell would show it (for messages)."""
    return shlex.join(argv)
