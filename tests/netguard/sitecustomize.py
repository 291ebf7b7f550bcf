"""A network guard for every Python process of a test run: put this folder on PYTHONPATH.

Python imports `sitecustomize` at start-up, so the runner, its jobs and every notebook kernel
load it. It writes "armed <pid>" to the file MLMLIB_NETGUARD_LOG names, then refuses (and logs)
any connection or name lookup that leaves the machine. Kernels talk to the runner over
IPC sockets (or loopback), which it lets through. The test reads the log: every process armed,
nothing refused.
"""

import os
import socket

_LOG = os.environ.get("MLMLIB_NETGUARD_LOG")
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "", None}


def _note(line: str) -> None:
    with open(_LOG, "a") as f:
        f.write(f"{line}\n")


def _local(address) -> bool:
    if isinstance(address, (str, bytes)):  # a Unix socket path
        return True
    host = address[0] if isinstance(address, tuple) and address else None
    return host in _LOCAL_NAMES or str(host).startswith("127.")


def _guard(original, what):
    def guarded(*args, **kwargs):
        address = args[1] if what in ("connect", "connect_ex") else args[0]
        if what == "getaddrinfo":
            address = (args[0],)
        if not _local(address):
            _note(f"refused {os.getpid()} {what} {address!r}")
            raise OSError(f"network guard: {what} to {address!r} refused (this test runs offline)")
        return original(*args, **kwargs)
    return guarded


if _LOG:
    _note(f"armed {os.getpid()}")
    socket.socket.connect = _guard(socket.socket.connect, "connect")
    socket.socket.connect_ex = _guard(socket.socket.connect_ex, "connect_ex")
    socket.create_connection = _guard(socket.create_connection, "create_connection")
    socket.getaddrinfo = _guard(socket.getaddrinfo, "getaddrinfo")
