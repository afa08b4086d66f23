package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestServeHTTPLimits: the config file's "http" limits reach the server.
// A client trickling its header is cut off, one trickling its body is
// answered 408, and a body over the cap 413 before it is read. The read
// timeouts are a second, which any machine reads a whole request within,
// and the trickles last several times longer.
func TestServeHTTPLimits(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "custody.json")
	os.WriteFile(cfg, []byte(`{"http":{"readHeaderTimeout":"1s","readTimeout":"1s","maxBodyBytes":2048}}`), 0o600)
	data := filepath.Join(dir, "data")
	base, _, stop := startServe(t, map[string]string{}, "--data", data, "--config", cfg)
	defer stop()
	agent := readToken(t, filepath.Join(data, agentTokenFile))
	addr := strings.TrimPrefix(base, "http://")

	t.Run("HeaderTrickle", func(t *testing.T) {
		conn := dialRaw(t, addr)
		// Ten seconds of header, a line every 100 ms.
		sent := make(chan struct{}) // closed once the whole header is sent
		go func() {
			fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
			for i := range 100 {
				if _, err := fmt.Fprintf(conn, "X-Slow-%d: y\r\n", i); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			close(sent)
		}()
		io.Copy(io.Discard, conn) // until the server hangs up
		select {
		case <-sent:
			t.Errorf("a trickled header held the connection to its end")
		default:
		}
	})
	t.Run("BodyTrickle", func(t *testing.T) {
		conn := dialRaw(t, addr)
		body := `{"tool":"get_time","arguments":{}}` + strings.Repeat(" ", 100)
		fmt.Fprintf(conn, "POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", agent, len(body))
		go func() {
			for i := range len(body) {
				if _, err := conn.Write([]byte{body[i]}); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		if code := rawStatus(t, conn); code != http.StatusRequestTimeout {
			t.Errorf("a trickled body: %d, want 408", code)
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		conn := dialRaw(t, addr)
		fmt.Fprintf(conn, "POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n", agent)
		if code := rawStatus(t, conn); code != http.StatusRequestEntityTooLarge {
			t.Errorf("a body over maxBodyBytes: %d, want 413", code)
		}
	})
	t.Run("MCPTooLarge", func(t *testing.T) {
		conn := dialRaw(t, addr)
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n", agent)
		if code := rawStatus(t, conn); code != http.StatusRequestEntityTooLarge {
			t.Errorf("an MCP body over maxBodyBytes: %d, want 413", code)
		}
	})
	t.Run("CallStillWorks", func(t *testing.T) {
		post(t, base+"/v1/calls", agent, `{"tool":"get_time","arguments":{}}`, 200)
	})
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn
}

func rawStatus(t *testing.T, conn net.Conn) int {
	t.Helper()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestServeTLS serves HTTPS with a certificate given by flags, and with
// one given in the config file.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := writeCert(t, dir)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	check := func(base string) {
		t.Helper()
		if !strings.HasPrefix(base, "https://") {
			t.Fatalf("serving on %s, want https", base)
		}
		res, err := client.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || res.TLS == nil {
			t.Fatalf("healthz over TLS: %d", res.StatusCode)
		}
		if res, err := http.Get("http" + strings.TrimPrefix(base, "https") + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				t.Errorf("plain HTTP answered 200 on the TLS port")
			}
		}
	}
	base, _, stop := startServe(t, map[string]string{}, "--data", filepath.Join(dir, "a"), "--tls-cert", certFile, "--tls-key", keyFile)
	check(base)
	stop()

	cfg := filepath.Join(dir, "custody.json")
	os.WriteFile(cfg, fmt.Appendf(nil, `{"tls":{"cert":%q,"key":%q}}`, certFile, keyFile), 0o600)
	base, _, stop = startServe(t, map[string]string{}, "--data", filepath.Join(dir, "b"), "--config", cfg)
	check(base)
	stop()
}

func TestServeTLSRefused(t *testing.T) {
	dir := t.TempDir()
	certFile, _, _ := writeCert(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ErrCertWithoutKey", []string{"--tls-cert", certFile}, "give both or neither"},
		{"ErrKeyNotFound", []string{"--tls-cert", certFile, "--tls-key", filepath.Join(dir, "nope.pem")}, "tls certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			m := &Main{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "d")}, tc.args...)
			if code := m.Run(context.Background(), args); code == exitOK || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q, want %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their files and a pool trusting it.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "custody test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestVersion prints the version, the commit and the Go version.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	if code := m.Run(context.Background(), []string{"version"}); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "custody ") || !strings.HasPrefix(lines[1], "commit ") || lines[2] != "go      "+runtime.Version() {
		t.Errorf("version printed:\n%s", out.String())
	}

	out.Reset()
	writeVersion(&out, &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}}})
	if want := "custody v1.2.3\ncommit  0123abcd (modified) 2026-12-01T10:00:00Z\ngo      go1.99\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if code := m.Run(context.Background(), []string{"version", "extra"}); code != exitUsage {
		t.Errorf("version with an argument: exit %d", code)
	}
}
