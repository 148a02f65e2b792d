// Package certs makes the certificates of cowfs's TLS tests: CAs, a
// server certificate for 127.0.0.1 and client certificates, written
// into TLS directories laid out as the daemon and its clients read them
// (ca.pem, cert.pem, key.pem; see ctl/tlsdir.go). Keys are ECDSA P-256,
// quick to make; nothing here is meant for use outside tests.
//
// Imports: the standard library only.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for a test.
type CA struct {
	Name string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA makes a CA named name, valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Name: name, cert: cert, key: key, pem: pemOf("CERTIFICATE", der)}
}

// PEM is the CA's certificate, as ca.pem holds it.
func (ca *CA) PEM() []byte { return ca.pem }

// Leaf says what certificate Issue makes.
type Leaf struct {
	Name    string // its common name
	Server  bool   // a server's (IP SAN 127.0.0.1, DNS localhost), else a client's
	Expired bool   // expired an hour ago
}

// Issue makes a certificate signed by ca and returns it and its key,
// PEM-encoded.
func (ca *CA) Issue(t testing.TB, l Leaf) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: l.Name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if l.Server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	if l.Expired {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf("CERTIFICATE", der), pemOf("PRIVATE KEY", kder)
}

// WriteServer writes a daemon's TLS directory into dir (made if
// missing): ca.pem is clients' CA, the CA a client certificate must be
// signed by; cert.pem and key.pem a server certificate for 127.0.0.1
// signed by ca. It returns dir.
func (ca *CA) WriteServer(t testing.TB, dir string, clients *CA) string {
	t.Helper()
	cert, key := ca.Issue(t, Leaf{Name: "cowfs daemon", Server: true})
	return Write(t, dir, clients.pem, cert, key)
}

// WriteClient writes a client's TLS directory into dir (made if
// missing): ca.pem is server, the CA of the daemon's certificate;
// cert.pem and key.pem a client certificate signed by ca. It returns
// dir.
func (ca *CA) WriteClient(t testing.TB, dir string, server *CA, l Leaf) string {
	t.Helper()
	if l.Name == "" {
		l.Name = "cowfs harness"
	}
	l.Server = false
	cert, key := ca.Issue(t, l)
	return Write(t, dir, server.pem, cert, key)
}

// Write writes a TLS directory: the directory 0700, the certificates
// 0644, the key 0600.
func Write(t testing.TB, dir string, caPEM, certPEM, keyPEM []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		b    []byte
		mode os.FileMode
	}{{"ca.pem", caPEM, 0o644}, {"cert.pem", certPEM, 0o644}, {"key.pem", keyPEM, 0o600}} {
		// Through a temporary name: a daemon reloading meanwhile reads
		// the old file or the new one, never half of one.
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p+".tmp", f.b, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p+".tmp", f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Pair makes one CA and writes, under root, a daemon's TLS directory
// (server) and a client's (client) that trust each other through it.
func Pair(t testing.TB, root string) (ca *CA, server, client string) {
	t.Helper()
	ca = NewCA(t, "cowfs test CA")
	server = ca.WriteServer(t, filepath.Join(root, "server"), ca)
	client = ca.WriteClient(t, filepath.Join(root, "client"), ca, Leaf{})
	return ca, server, client
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
