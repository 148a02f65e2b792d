package ctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// ClientTLS reads a client's TLS directory: ca.pem, the CA the
// daemon's certificate must be signed by; cert.pem and key.pem, the
// client's own, which the daemon checks against its ca.pem. The files
// are read and checked as the daemon reads its own (tlsdir.go).
func ClientTLS(dir string) (*tls.Config, error) {
	f, err := loadTLSDir(dir)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		RootCAs:      f.cas,
		Certificates: []tls.Certificate{f.cert},
	}, nil
}

// DialRemote returns a client for the daemon listening at rawURL
// (https://HOST:PORT), with the certificates of the TLS directory dir
// (ClientTLS). Nothing is sent until a method is called.
func DialRemote(rawURL, dir string) (*Client, error) {
	if _, err := ParseRemoteURL(rawURL); err != nil {
		return nil, err
	}
	cfg, err := ClientTLS(dir)
	if err != nil {
		return nil, err
	}
	return NewRemote(rawURL, cfg)
}

// NewRemote returns a client for the daemon listening at rawURL
// (https://HOST:PORT) over TLS with cfg, which must hold the client's
// certificate and the CA the daemon's is signed by. The client's
// methods are those of a socket's client; the daemon's certificate
// must name HOST (cfg.ServerName overrides it), and nothing older than
// TLS 1.3 is spoken.
func NewRemote(rawURL string, cfg *tls.Config) (*Client, error) {
	hostport, err := ParseRemoteURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg = cfg.Clone()
	if cfg.MinVersion < tls.VersionTLS13 {
		cfg.MinVersion = tls.VersionTLS13
	}
	cfg.NextProtos = []string{"http/1.1"}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 15 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", hostport)
		},
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 30 * time.Second,
		MaxIdleConns:        2,
		IdleConnTimeout:     30 * time.Second,
	}
	base := (&url.URL{Scheme: "https", Host: hostport}).String()
	return &Client{Remote: base, base: base, http: &http.Client{Transport: tr}}, nil
}

// remoteError says what a failure to talk to a remote daemon means
// where TLS's own words do not: which side refused which certificate.
func remoteError(remote string, err error) error {
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	var op *net.OpError
	switch {
	case errors.As(err, &verr), errors.As(err, &uerr), errors.As(err, &herr):
		return fmt.Errorf("%s: %w by this client: the daemon's certificate is not signed by the client's ca.pem, or does not name the host, or is not valid now (%w)", remote, ErrCertificate, err)
	case errors.As(err, &op) && op.Op == "remote error":
		// A TLS alert from the daemon: in TLS 1.3 it judges the
		// client's certificate after the client thinks the handshake
		// done, so the refusal arrives with the first read. (A client
		// sends no certificate at all if its issuer is not one the
		// daemon names as accepted: "certificate required".)
		return fmt.Errorf("%s: %w by the daemon: is this client's cert.pem signed by the daemon's ca.pem, and valid now? (%w)", remote, ErrCertificate, err)
	}
	return fmt.Errorf("%s: %w", remote, err)
}
