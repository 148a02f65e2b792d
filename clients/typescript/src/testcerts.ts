// Certificates for tests of the remote mode (`@cowfs/client/testing`),
// made with the openssl command: a CA, the daemon's certificate for
// 127.0.0.1, and client directories laid out as `--tls-dir` wants them,
// good and bad. Keys are EC P-256 (quick to make) and private to their
// owner (0600), in directories only their owner can write, as the daemon
// requires of its own.

import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** TLS directories (ca.pem, cert.pem, key.pem each) made by testCertificates. */
export interface TestCertificates {
  /** The daemon's `--tls-dir`: the CA, and a certificate for 127.0.0.1 and localhost. */
  server: string;
  /** A client the daemon takes: a certificate signed by the daemon's CA. */
  client: string;
  /** A client whose certificate another CA signed (its ca.pem is the daemon's). */
  otherCA: string;
  /** A client whose certificate, signed by the daemon's CA, expired in 2020. */
  expired: string;
  /** A client with a good certificate that trusts another CA than the one that signed the daemon's. */
  untrusting: string;
  /** A daemon's directory like server's, but its certificate names only cowfs.invalid: a client of 127.0.0.1 refuses it. */
  misnamed: string;
}

/** Makes the directories of TestCertificates under dir (which must exist). */
export async function testCertificates(dir: string): Promise<TestCertificates> {
  const work = path.join(dir, "work");
  await fs.mkdir(work, { mode: 0o700 });
  const w = (name: string) => path.join(work, name);
  const openssl = (...args: string[]) => run("openssl", args, { cwd: work });
  const newKey = (key: string) => ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", w(key)];
  for (const ca of ["ca", "other-ca"]) {
    await openssl("req", "-x509", ...newKey(`${ca}.key`), "-out", w(`${ca}.pem`), "-days", "2", "-subj", `/CN=cowfs test ${ca}`,
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  }
  await fs.writeFile(w("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  await fs.writeFile(w("misnamed.ext"), "subjectAltName=DNS:cowfs.invalid\nextendedKeyUsage=serverAuth\n");
  await fs.writeFile(w("client.ext"), "extendedKeyUsage=clientAuth\n");
  // A certificate for name, signed by ca, valid for two days from now.
  const sign = async (name: string, ca: string, ext: string) => {
    await openssl("req", ...newKey(`${name}.key`), "-out", w(`${name}.csr`), "-subj", `/CN=cowfs test ${name}`);
    await openssl("x509", "-req", "-in", w(`${name}.csr`), "-CA", w(`${ca}.pem`), "-CAkey", w(`${ca}.key`), "-CAcreateserial",
      "-out", w(`${name}.pem`), "-days", "2", "-extfile", w(ext));
  };
  await sign("server", "ca", "server.ext");
  await sign("misnamed", "ca", "misnamed.ext");
  await sign("client", "ca", "client.ext");
  await sign("stranger", "other-ca", "client.ext");
  // openssl x509 in OpenSSL 3.0 has no -not_before; openssl ca has -startdate.
  await fs.mkdir(w("db"));
  await fs.writeFile(w("db/index.txt"), "");
  await fs.writeFile(w("db/serial"), "01\n");
  await fs.writeFile(
    w("ca.cnf"),
    ["[ca]", "default_ca = test", "[test]", "database = db/index.txt", "new_certs_dir = db", "serial = db/serial",
      "default_md = sha256", "policy = any", "unique_subject = no", "[any]", "commonName = supplied",
      "[client]", "extendedKeyUsage = clientAuth", ""].join("\n"),
  );
  await openssl("ca", "-batch", "-config", w("ca.cnf"), "-cert", w("ca.pem"), "-keyfile", w("ca.key"), "-in", w("client.csr"),
    "-out", w("expired.pem"), "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-extensions", "client", "-notext");

  const tlsDir = async (name: string, ca: string, cert: string, key: string): Promise<string> => {
    const d = path.join(dir, name);
    await fs.mkdir(d, { mode: 0o700 });
    await fs.copyFile(w(`${ca}.pem`), path.join(d, "ca.pem"));
    await fs.copyFile(w(`${cert}.pem`), path.join(d, "cert.pem"));
    await fs.copyFile(w(`${key}.key`), path.join(d, "key.pem"));
    await fs.chmod(path.join(d, "ca.pem"), 0o644);
    await fs.chmod(path.join(d, "cert.pem"), 0o644);
    await fs.chmod(path.join(d, "key.pem"), 0o600);
    return d;
  };
  return {
    server: await tlsDir("server", "ca", "server", "server"),
    client: await tlsDir("client", "ca", "client", "client"),
    otherCA: await tlsDir("other-ca", "ca", "stranger", "stranger"),
    expired: await tlsDir("expired", "ca", "expired", "client"),
    untrusting: await tlsDir("untrusting", "other-ca", "client", "client"),
    misnamed: await tlsDir("misnamed", "ca", "misnamed", "misnamed"),
  };
}
