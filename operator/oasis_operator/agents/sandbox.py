"""A sandbox of its own for every agent process the operator starts (bubblewrap).

The agent under evaluation is assumed hostile and the machine may hold production credentials, so a
command agent never runs in the operator's own view of the machine. `wrap(command, home)` turns a
command into a bubblewrap (`bwrap`) invocation that gives it:

- a private filesystem view: the system directories (`/usr`, `/etc` and the `/bin`, `/lib*`, `/sbin`
  links) read-only; a fresh, empty `/tmp`; a private `/proc` and `/dev`; its HOME (`/home/agent`, a
  directory the caller prepared, holding the kubeconfig and request of this call and nothing else);
  read-only, the program itself, its `#!` interpreter and, when either belongs to the operator's own
  Python installation, that installation's code (`own_install()`), plus the paths the caller lists;
  nothing else of the host: no other home directory, run directory, data directory or `/sys`;
- its own PID, IPC and UTS namespaces: it sees and can signal no other process; `/proc/<pid>` of the
  operator or another agent does not exist for it;
- when the operator runs as root, an unprivileged user (`nobody`, or the uid of the operator's
  OASIS_AGENT_UID setting, given in the policy): bwrap sets up the view as root, then `setpriv` drops
  to that user with no capabilities, no supplementary groups and no-new-privileges before the agent's
  program starts. Run as another user, bwrap uses an unprivileged
  user namespace and the agent keeps that user (nested user namespaces are disabled);
- the host's network (the gateway on 127.0.0.1 must stay reachable), and the process dies with the
  operator (`--die-with-parent`) in a session of its own (`--new-session`).

Why bubblewrap: it is the small, audited tool made for exactly this (Flatpak's sandbox), packaged by
Debian, needs no daemon, works as root inside a container and, with user namespaces, without root.
`check()` proves once per process that a sandbox can be set up here; the command adapter refuses to run
an agent when it cannot (unless the evaluation opts out with `isolation: none`).
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import oasis_operator

if TYPE_CHECKING:  # only a type here: `oasis agent sandbox` needs no CRD models
    from oasis_operator.models.crd import AgentSpec

AGENT_HOME = "/home/agent"
# The only variables a command agent inherits; everything else (cloud credentials, API keys, the
# operator's own KUBECONFIG) stays out of its reach.
PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_TMP = "/tmp"  # noqa: S108 - a fresh tmpfs of the sandbox's own, not the host's /tmp
SYSTEM_DIRS = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM = (*SYSTEM_DIRS, *SYSTEM_LINKS)
SETPRIV = "/usr/bin/setpriv"
FALLBACK_UID = 65534


class SandboxUnavailableError(RuntimeError):
    """No sandbox can be set up on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What the agent may see beyond the system directories, and whether it is isolated at all."""

    isolated: bool = True
    read_only: tuple[Path, ...] = field(default_factory=tuple)
    # The uid the agent runs as when the operator is root (the operator's OASIS_AGENT_UID); None: nobody.
    uid: int | None = None

    def describe(self) -> str:
        """One line for reports: how the agent process was isolated."""
        if not self.isolated:
            return (
                "agent isolation: none (spec.agent.command.isolation: none) — the command agent ran as the "
                "operator's own user with the operator's filesystem and processes in view"
            )
        user = (
            f"user {agent_user(self.uid)[0]}"
            if os.geteuid() == 0
            else "the operator's user in a user namespace"
        )
        return (
            "agent isolation: bubblewrap sandbox — private filesystem view (system directories read-only, "
            f"a fresh home with only its kubeconfig), its own PID namespace, {user}"
        )


@dataclass(frozen=True)
class AgentUser:
    uid: int
    gid: int


def agent_user(uid: int | None = None) -> tuple[str, AgentUser]:
    """The unprivileged user agents run as when the operator is root: `uid` (never 0) or nobody."""
    if uid is not None and uid > 0:
        return str(uid), AgentUser(uid, uid)
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return str(FALLBACK_UID), AgentUser(FALLBACK_UID, FALLBACK_UID)
    return "nobody", AgentUser(entry.pw_uid, entry.pw_gid)


def own_install() -> tuple[Path, ...]:
    """The operator's own Python installation: interpreter, environment and this package's code."""
    source_root = Path(oasis_operator.__file__).resolve().parent.parent
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), source_root}
    return tuple(sorted(p for p in paths if not _under(p, SYSTEM)))


def _under(path: Path, roots: Iterable[str | Path]) -> bool:
    return any(path == Path(r) or Path(r) in path.parents for r in roots)


def _interpreter(program: Path) -> Path | None:
    """The `#!` interpreter of a script, if it names an absolute path."""
    try:
        with program.open("rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return Path(words[0]) if words and words[0].startswith("/") else None


def program_paths(program: str) -> tuple[Path, ...]:
    """What running `program` needs besides the system: itself, its interpreter, the operator's code."""
    found = shutil.which(program)
    if found is None:
        return ()
    path = Path(found)
    needed = {path, path.resolve()}
    interpreter = _interpreter(path.resolve())
    if interpreter is not None:
        needed |= {interpreter, interpreter.resolve()}
    install = own_install()
    if any(_under(p, install) for p in needed):
        needed |= set(install)
    return tuple(sorted(p for p in needed if not _under(p, SYSTEM)))


def _binds(paths: Iterable[Path]) -> list[str]:
    """`--ro-bind` for each path that exists, outermost first so that nested paths stay visible."""
    args: list[str] = []
    shown: list[Path] = []
    made: set[str] = {*SYSTEM, SANDBOX_TMP, "/home"}
    for path in sorted({Path(os.path.abspath(p)) for p in paths}, key=lambda p: len(p.parts)):
        if path == Path("/"):
            raise ValueError("a sandbox cannot show the whole filesystem ('/' in the read-only paths)")
        if path.exists() and not _under(path, [*SYSTEM, *shown]):
            args += [*_parents(path, made), "--ro-bind", str(path), str(path)]
            shown.append(path)
    return args


def _parents(path: Path, made: set[str]) -> list[str]:
    """Directories leading to a mount point, made traversable (0755, empty but for what is mounted):
    otherwise bwrap creates them 0700 and the host's own modes (a 0700 /root, say) would hide it."""
    args: list[str] = []
    for parent in reversed(path.parents[:-1]):
        if str(parent) not in made:
            args += ["--perms", "0755", "--dir", str(parent)]
            made.add(str(parent))
    return args


def _system() -> list[str]:
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind", directory, directory]
    for link in SYSTEM_LINKS:
        path = Path(link)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), link]
        elif path.is_dir():
            args += ["--ro-bind", link, link]
    return args


def wrap(
    command: Sequence[str], home: Path | None, policy: SandboxPolicy, bwrap: str | None = None
) -> list[str]:
    """The bwrap command line that runs `command` sandboxed, with `home` (if any) as its HOME."""
    binary = bwrap or shutil.which("bwrap")
    if binary is None:
        raise SandboxUnavailableError(
            "bubblewrap (bwrap) is not installed: install it (Debian: apt-get install bubblewrap; "
            "hack/install-deps.sh does)"
        )
    found = shutil.which(command[0])
    program = os.path.abspath(found) if found else command[0]
    args = [binary, *_system()]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", SANDBOX_TMP]
    args += ["--perms", "0755", "--dir", "/home"]
    args += _binds([*program_paths(program), *policy.read_only])
    if home is not None:
        args += ["--bind", str(home), AGENT_HOME, "--chdir", AGENT_HOME]
    else:
        args += ["--perms", "0777", "--tmpfs", AGENT_HOME, "--chdir", AGENT_HOME]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "agent"]
    args += ["--new-session", "--die-with-parent"]
    if os.geteuid() == 0:
        user = agent_user(policy.uid)[1]
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
        args += [SETPRIV, f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups"]
        args += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    else:
        args += ["--unshare-user", "--disable-userns", "--"]
    return [*args, program, *command[1:]]


def prepare_home(home: Path, uid: int | None = None) -> None:
    """Make `home` the agent's own: its user owns it; others may only pass through (bwrap, still root
    but without capabilities, must enter it before dropping to that user). The host directory around it
    is the operator's and closed (0700), so on the host nobody else reaches it at all."""
    if os.geteuid() != 0:
        home.chmod(0o700)
        return
    user = agent_user(uid)[1]
    for path in (home, *home.rglob("*")):
        os.chown(path, user.uid, user.gid, follow_symlinks=False)
    home.chmod(0o711)


@functools.cache
def check() -> str | None:
    """None when a sandbox can be set up here; otherwise why not (cached for the process)."""
    try:
        command = wrap(["/bin/true"], None, SandboxPolicy())
    except SandboxUnavailableError as exc:
        return str(exc)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started: {exc}"
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
        return (
            f"bubblewrap cannot set up a sandbox on this machine ({detail[0]}); as root it needs "
            "CAP_SYS_ADMIN, as another user unprivileged user namespaces"
        )
    return None


def require() -> None:
    """Raise `SandboxUnavailableError` unless a sandbox can be set up here."""
    problem = check()
    if problem is not None:
        raise SandboxUnavailableError(problem)


def sandbox_policy(agent: AgentSpec, uid: int | None = None) -> SandboxPolicy:
    """The sandbox a command agent of this spec gets (`isolation`, `readOnlyPaths`), as user `uid`."""
    if agent.command is None:
        return SandboxPolicy(uid=uid)
    return SandboxPolicy(
        isolated=agent.command.isolation == "sandbox",
        read_only=tuple(Path(p) for p in agent.command.readOnlyPaths),
        uid=uid,
    )


def isolation_characteristics(agent: AgentSpec, uid: int | None = None) -> list[str]:
    """What the report says about how the agent's process was isolated from the operator's machine."""
    if agent.command is not None:
        return [sandbox_policy(agent, uid).describe()]
    if agent.job is not None:
        return ["agent isolation: a pod of its own in the operator's cluster, no Kubernetes token mounted"]
    return [
        "agent isolation: the HTTP agent runs outside the operator; its isolation is up to whoever runs it "
        "(`oasis agent sandbox -- <command>` runs it the way command agents run)"
    ]
