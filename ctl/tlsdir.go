package ctl

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The names of the files of a TLS directory, on either side: ca.pem is
// the CA the other side's certificate must be signed by, cert.pem and
// key.pem this side's certificate and private key.
const (
	TLSCAFile   = "ca.pem"
	TLSCertFile = "cert.pem"
	TLSKeyFile  = "key.pem"
)

// ErrTLSDir: a TLS directory, or a file in it, is missing, unreadable,
// malformed, or open to others. Errors that wrap it say which file and
// why.
var ErrTLSDir = errors.New("TLS directory refused")

// maxPEM caps what is read of each file: a certificate bundle is some
// kilobytes, and the daemon reads these files as root.
const maxPEM = 1 << 20

// tlsFiles is what a TLS directory holds, parsed.
type tlsFiles struct {
	cas  *x509.CertPool
	cert tls.Certificate
}

// loadTLSDir reads and checks ca.pem, cert.pem and key.pem in dir.
//
// The daemon is root and dir is the operator's, so each file is
// reached from a descriptor of dir with openat2 RESOLVE_BENEATH: a
// symlink is followed only while it stays inside dir (the layout of a
// Kubernetes Secret volume, where ca.pem points to ..data/ca.pem), never
// out of it, and never through /proc's magic links. Then, on the
// descriptor opened, the file must be a regular file owned by root or
// this uid that nobody else can write: whoever could change ca.pem
// could let their own certificate in. key.pem must besides be unreadable
// by others (its group may read it, as a Kubernetes fsGroup makes it).
// dir itself must be root's or this uid's, and writable by nobody else
// unless it is sticky (as a Secret volume is: others cannot replace
// root's names in it).
func loadTLSDir(dir string) (tlsFiles, error) {
	var f tlsFiles
	if dir == "" {
		return f, fmt.Errorf("%w: no TLS directory given", ErrTLSDir)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return f, fmt.Errorf("%w: %s: %w", ErrTLSDir, dir, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return f, fmt.Errorf("%w: %s: %w", ErrTLSDir, dir, err)
	}
	if err := checkOwner(st, dir, "directory"); err != nil {
		return f, err
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return f, fmt.Errorf("%w: the directory %s is writable by its group or others (mode %04o): they could replace the certificates", ErrTLSDir, dir, st.Mode&0o7777)
	}
	caPEM, err := readTLSFile(dfd, dir, TLSCAFile, false)
	if err != nil {
		return f, err
	}
	certPEM, err := readTLSFile(dfd, dir, TLSCertFile, false)
	if err != nil {
		return f, err
	}
	keyPEM, err := readTLSFile(dfd, dir, TLSKeyFile, true)
	if err != nil {
		return f, err
	}
	if f.cas, err = caPool(caPEM); err != nil {
		return f, fmt.Errorf("%w: %s/%s: %w", ErrTLSDir, dir, TLSCAFile, err)
	}
	if f.cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return f, fmt.Errorf("%w: %s/%s and %s: %w", ErrTLSDir, dir, TLSCertFile, TLSKeyFile, err)
	}
	now := time.Now()
	if leaf := f.cert.Leaf; leaf != nil && (now.After(leaf.NotAfter) || now.Before(leaf.NotBefore)) {
		return f, fmt.Errorf("%w: %s/%s is valid from %s to %s, not now", ErrTLSDir, dir, TLSCertFile,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return f, nil
}

// readTLSFile reads name beneath the directory dfd (see loadTLSDir).
func readTLSFile(dfd int, dir, name string, secret bool) ([]byte, error) {
	p := dir + "/" + name
	fd, err := unix.Openat2(dfd, name, &unix.OpenHow{
		// O_NONBLOCK: a FIFO put there does not hang the open.
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.EXDEV) {
		return nil, fmt.Errorf("%w: %s leads out of %s (a symlink or ..): only files inside the directory are read", ErrTLSDir, p, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTLSDir, p, err)
	}
	file := os.NewFile(uintptr(fd), p)
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTLSDir, p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrTLSDir, p)
	}
	if err := checkOwner(st, p, "file"); err != nil {
		return nil, err
	}
	if st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("%w: %s is writable by its group or others (mode %04o)", ErrTLSDir, p, st.Mode&0o7777)
	}
	if secret && st.Mode&0o007 != 0 {
		return nil, fmt.Errorf("%w: the private key %s is open to others (mode %04o); chmod 600 %s", ErrTLSDir, p, st.Mode&0o7777, p)
	}
	b, err := io.ReadAll(io.LimitReader(file, maxPEM+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTLSDir, p, err)
	}
	if len(b) > maxPEM {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTLSDir, p, maxPEM)
	}
	return b, nil
}

// checkOwner refuses what neither root nor this uid owns.
func checkOwner(st unix.Stat_t, p, what string) error {
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: the %s %s is owned by uid %d, not by root or uid %d", ErrTLSDir, what, p, st.Uid, os.Geteuid())
	}
	return nil
}

// caPool parses every certificate of a PEM bundle; there must be one.
func caPool(b []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no certificate in it")
	}
	return pool, nil
}
