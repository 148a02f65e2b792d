"""Certificates for tests of the remote mode (``cowfs.testing``), made with the openssl command.

A CA, the daemon's certificate for 127.0.0.1, and client directories laid
out as ``--tls-dir`` wants them, good and bad. Keys are EC P-256 (quick to
make) and private to their owner (0600), in directories only their owner
can write, as the daemon requires of its own. The TypeScript client's
testcerts.ts makes the same set.
"""

import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class TestCertificates:
    """TLS directories (ca.pem, cert.pem, key.pem each) made by test_certificates."""

    __test__ = False  # not a test class, whatever a collector thinks of its name

    #: The daemon's ``--tls-dir``: the CA, and a certificate for 127.0.0.1 and localhost.
    server: str
    #: A client the daemon takes: a certificate signed by the daemon's CA.
    client: str
    #: A client whose certificate another CA signed (its ca.pem is the daemon's).
    other_ca: str
    #: A client whose certificate, signed by the daemon's CA, expired in 2020.
    expired: str
    #: A client with a good certificate that trusts another CA than the one that signed the daemon's.
    untrusting: str
    #: A daemon's directory like server's, but its certificate names only cowfs.invalid.
    misnamed: str


_CA_CONFIG = """[ca]
default_ca = test
[test]
database = db/index.txt
new_certs_dir = db
serial = db/serial
default_md = sha256
policy = any
unique_subject = no
[any]
commonName = supplied
[client]
extendedKeyUsage = clientAuth
"""


def test_certificates(d: str) -> TestCertificates:
    """Makes the directories of TestCertificates under d (which must exist)."""
    work = os.path.join(d, "work")
    os.mkdir(work, 0o700)

    def w(name: str) -> str:
        return os.path.join(work, name)

    def openssl(*args: str) -> None:
        p = subprocess.run(["openssl", *args], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)}: exit {p.returncode}\n{p.stderr}")

    def new_key(key: str) -> list:
        return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", w(key)]

    def write(name: str, text: str) -> None:
        with open(w(name), "w", encoding="ascii") as f:
            f.write(text)

    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *new_key(f"{ca}.key"), "-out", w(f"{ca}.pem"), "-days", "2",
                "-subj", f"/CN=cowfs test {ca}", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    write("misnamed.ext", "subjectAltName=DNS:cowfs.invalid\nextendedKeyUsage=serverAuth\n")
    write("client.ext", "extendedKeyUsage=clientAuth\n")

    def sign(name: str, ca: str, ext: str) -> None:
        """A certificate for name, signed by ca, valid for two days from now."""
        openssl("req", *new_key(f"{name}.key"), "-out", w(f"{name}.csr"), "-subj", f"/CN=cowfs test {name}")
        openssl("x509", "-req", "-in", w(f"{name}.csr"), "-CA", w(f"{ca}.pem"), "-CAkey", w(f"{ca}.key"),
                "-CAcreateserial", "-out", w(f"{name}.pem"), "-days", "2", "-extfile", w(ext))

    sign("server", "ca", "server.ext")
    sign("misnamed", "ca", "misnamed.ext")
    sign("client", "ca", "client.ext")
    sign("stranger", "other-ca", "client.ext")
    # openssl x509 in OpenSSL 3.0 has no -not_before; openssl ca has -startdate.
    os.mkdir(w("db"))
    write("db/index.txt", "")
    write("db/serial", "01\n")
    write("ca.cnf", _CA_CONFIG)
    openssl("ca", "-batch", "-config", w("ca.cnf"), "-cert", w("ca.pem"), "-keyfile", w("ca.key"),
            "-in", w("client.csr"), "-out", w("expired.pem"), "-startdate", "20200101000000Z",
            "-enddate", "20200102000000Z", "-extensions", "client", "-notext")

    def tls_dir(name: str, ca: str, cert: str, key: str) -> str:
        t = os.path.join(d, name)
        os.mkdir(t, 0o700)
        for src, dst, mode in ((f"{ca}.pem", "ca.pem", 0o644), (f"{cert}.pem", "cert.pem", 0o644),
                               (f"{key}.key", "key.pem", 0o600)):
            shutil.copyfile(w(src), os.path.join(t, dst))
            os.chmod(os.path.join(t, dst), mode)
        return t

    return TestCertificates(
        server=tls_dir("server", "ca", "server", "server"),
        client=tls_dir("client", "ca", "client", "client"),
        other_ca=tls_dir("other-ca", "ca", "stranger", "stranger"),
        expired=tls_dir("expired", "ca", "expired", "client"),
        untrusting=tls_dir("untrusting", "other-ca", "client", "client"),
        misnamed=tls_dir("misnamed", "ca", "misnamed", "misnamed"),
    )


test_certificates.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test, for pytest too
