"""A daemon on another machine, over mutual TLS.

``cowfs mount --listen https://ADDR:PORT --tls-dir DIR`` serves the
control socket's API over TCP with mutual TLS 1.3. The client holds a
directory laid out as the CLI's (``--tls-dir``, ``$COWFS_TLS_DIR``):
ca.pem verifies the daemon, cert.pem and key.pem are the client's own
certificate, signed by the CA the daemon trusts. There is nothing else to
check: the certificates are the trust, as SO_PEERCRED is for the socket.
So a connection verifies the daemon's certificate against ca.pem only
(not the system's CAs), with its name or IP address matched against the
URL's host, never accepts less than TLS 1.3, and always presents the
client's certificate: a remote without a TLS directory is refused here,
before anything is sent.

The directory is read again for every connection (context()), so
certificates renewed on disk take effect without a new Client, as the
daemon reloads its own on SIGHUP. It is held to the daemon's rules for its
own (ctl/tlsdir.go), since whoever could change ca.pem could put their own
server in the daemon's place: the directory and each file must be root's
or this user's and writable by nobody else (the directory may be sticky
instead), and key.pem unreadable by others. ca.pem is checked on the
descriptor it is read from; cert.pem and key.pem are checked so, then
loaded by path (ssl loads a certificate chain from files only), which
only root or this user could swap in between, the directory being theirs
alone. Unlike the daemon, which cannot be led out of the directory, the
client follows a symlink anywhere (a Kubernetes Secret volume's files are
links into ..data) and checks what it reaches.

This is the TypeScript client's remote.ts.
"""

import os
import ssl
import stat
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import TLSError

#: The files of a TLS directory, as the CLI names them.
CA_FILE = "ca.pem"
CERT_FILE = "cert.pem"
KEY_FILE = "key.pem"

#: What is read of ca.pem at most: a bundle is some kilobytes.
_MAX_PEM = 1 << 20


@dataclass(frozen=True)
class Remote:
    """A daemon's TLS listener and how to reach it (parse_remote makes one)."""

    #: ``https://HOST:PORT``, as given.
    url: str
    #: The host to connect to (an IPv6 address without its brackets).
    host: str
    port: int
    #: The directory holding ca.pem, cert.pem and key.pem.
    tls_dir: str

    def context(self) -> ssl.SSLContext:
        """A TLS context for one connection, with the directory read now.

        TLSError if the directory does not pass the checks of the module
        docstring, or its files do not load.
        """
        try:
            ca = read_tls_dir(self.tls_dir)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the server and its name
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3
            ctx.load_verify_locations(cadata=ca.decode("ascii", "replace"))
            ctx.load_cert_chain(os.path.join(self.tls_dir, CERT_FILE), os.path.join(self.tls_dir, KEY_FILE))
            ctx.set_alpn_protocols(["http/1.1"])
        except (OSError, ValueError) as e:
            raise TLSError(self.url, f"TLS directory {self.tls_dir}: {e}") from e
        return ctx


def parse_remote(url: str, tls_dir: str) -> Remote:
    """Checks a remote's URL and TLS directory; ValueError if either will not do.

    Only ``https://HOST:PORT`` is taken: the API is never sent in
    plaintext, and a port must be given (the daemon has no default one).
    """
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError as e:
        raise ValueError(f"remote {url!r}: {e}; want https://HOST:PORT") from e
    if u.scheme != "https":
        raise ValueError(f"remote {url}: the scheme must be https (the daemon serves only mutual TLS)")
    if not u.hostname:
        raise ValueError(f"remote {url}: no host; want https://HOST:PORT")
    if port is None:
        raise ValueError(f"remote {url}: no port; want https://HOST:PORT")
    if u.path not in ("", "/") or u.query or u.fragment or u.username is not None or u.password is not None:
        raise ValueError(f"remote {url}: want https://HOST:PORT, nothing more")
    if not tls_dir:
        raise ValueError(f"remote {url}: no client certificate; give tls_dir (or set COWFS_TLS_DIR)")
    return Remote(url=url, host=u.hostname, port=port, tls_dir=tls_dir)


def read_tls_dir(d: str) -> bytes:
    """Checks the TLS directory d as the module docstring says; returns ca.pem's bytes."""
    uid = os.geteuid()
    st = os.stat(d)
    _check_owner(d, "directory", st.st_uid, uid)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{d} is not a directory")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise PermissionError(f"the directory {d} is writable by its group or others "
                              f"(mode {_mode(st.st_mode)}): they could replace the certificates")
    ca = _read_checked(d, CA_FILE, False, uid, read=True)
    _read_checked(d, CERT_FILE, False, uid)
    _read_checked(d, KEY_FILE, True, uid)
    return ca


def _read_checked(d: str, name: str, secret: bool, uid: int, read: bool = False) -> bytes:
    """Opens one file of d, checks it on its descriptor, and reads it if asked."""
    p = os.path.join(d, name)
    # O_NONBLOCK: a FIFO put there does not hang the open.
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PermissionError(f"{p} is not a regular file")
        _check_owner(p, "file", st.st_uid, uid)
        if st.st_mode & 0o022:
            raise PermissionError(f"{p} is writable by its group or others (mode {_mode(st.st_mode)})")
        if secret and st.st_mode & 0o007:
            raise PermissionError(f"the private key {p} is open to others (mode {_mode(st.st_mode)}); chmod 600 {p}")
        if not read:
            return b""
        with os.fdopen(fd, "rb", closefd=False) as f:
            b = f.read(_MAX_PEM + 1)
        if len(b) > _MAX_PEM:
            raise ValueError(f"{p} is over {_MAX_PEM} bytes")
        return b
    finally:
        os.close(fd)


def _check_owner(p: str, what: str, owner: int, uid: int) -> None:
    if owner not in (0, uid):
        raise PermissionError(f"the {what} {p} is owned by uid {owner}, not by root or uid {uid}")


def _mode(m: int) -> str:
    return format(m & 0o7777, "04o")
