package streaming

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// backend is a raw-TCP stand-in for a runtime streaming server: each
// connection's request goes to handle, which answers on the connection.
type backend struct {
	ln   net.Listener
	reqs chan *http.Request
	wg   sync.WaitGroup
}

func startBackend(t *testing.T, handle func(req *http.Request, conn net.Conn, br *bufio.Reader)) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	b := &backend{ln: ln, reqs: make(chan *http.Request, 16)}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				b.reqs <- req
				handle(req, conn, br)
			}()
		}
	}()
	t.Cleanup(b.close)
	return b
}

func (b *backend) close() {
	b.ln.Close()
	b.wg.Wait()
}

func (b *backend) url(path string) *url.URL {
	return &url.URL{Scheme: "http", Host: b.ln.Addr().String(), Path: path}
}

// upgradeAndEcho switches protocols, sends "early" in the same write as
// the 101, then echoes what it reads until the client goes away.
func upgradeAndEcho(_ *http.Request, conn net.Conn, br *bufio.Reader) {
	_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test/1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\nearly")
	_, _ = io.Copy(conn, br)
}

// dialUpgrade sends an upgrade request to srv and reads the answer.
func dialUpgrade(t *testing.T, srv *httptest.Server, path string, header http.Header) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "test/1")
	for k, v := range header {
		req.Header[k] = v
	}
	if err := req.Write(conn); err != nil {
		t.Fatalf("write request: %v", err)
	}
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn, br, resp
}

// readN reads exactly n bytes within 5 seconds.
func readN(t *testing.T, conn net.Conn, r io.Reader, n int) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("read %d bytes: %v (got %q)", n, err, buf)
	}
	return string(buf)
}

// expectClosed waits for the connection to be closed by the other side.
func expectClosed(t *testing.T, conn net.Conn, r io.Reader, within time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
}

// goroutineBaseline returns a check that the goroutine count came back to
// what it is now.
func goroutineBaseline(t *testing.T) func() {
	t.Helper()
	base := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= base {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines, baseline %d\n%s", n, base, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestProxyForwardsUpgradeRequest(t *testing.T) {
	be := startBackend(t, upgradeAndEcho)
	target := be.url("/exec/tok%2Fen")
	target.RawPath = "/exec/tok%2Fen"
	target.Path = "/exec/tok/en"
	target.RawQuery = "a=1"
	srv := httptest.NewServer(&upgradeProxy{target: target})
	defer srv.Close()

	header := http.Header{
		"Connection":                {"keep-alive, Upgrade"},
		"X-Stream-Protocol-Version": {"v4.channel.k8s.io", "v3.channel.k8s.io"},
		"Sec-Websocket-Protocol":    {"v4.channel.k8s.io"},
		"Sec-Websocket-Key":         {"dGhlIHNhbXBsZSBub25jZQ=="},
		"Sec-Websocket-Version":     {"13"},
		"Authorization":             {"Bearer secret"},
		"Cookie":                    {"c=1"},
		"X-Remote-User":             {"admin"},
	}
	conn, br, resp := dialUpgrade(t, srv, "/exec/ns/pod/c?command=ls&output=1", header)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	if got := resp.Header.Get("X-Stream-Protocol-Version"); got != "v4.channel.k8s.io" {
		t.Errorf("negotiated protocol header %q not relayed", got)
	}
	readN(t, conn, br, len("early"))
	req := <-be.reqs

	tests := []struct {
		name string
		got  any
		want any
	}{
		{name: "method", got: req.Method, want: http.MethodPost},
		{name: "path and query of the runtime URL", got: req.RequestURI, want: "/exec/tok%2Fen?a=1"},
		{name: "host", got: req.Host, want: target.Host},
		{name: "connection", got: req.Header.Get("Connection"), want: "Upgrade"},
		{name: "upgrade", got: req.Header.Get("Upgrade"), want: "test/1"},
		{name: "stream protocols", got: strings.Join(req.Header.Values("X-Stream-Protocol-Version"), ","), want: "v4.channel.k8s.io,v3.channel.k8s.io"},
		{name: "websocket protocol", got: req.Header.Get("Sec-WebSocket-Protocol"), want: "v4.channel.k8s.io"},
		{name: "websocket key", got: req.Header.Get("Sec-WebSocket-Key"), want: "dGhlIHNhbXBsZSBub25jZQ=="},
		{name: "websocket version", got: req.Header.Get("Sec-WebSocket-Version"), want: "13"},
		{name: "no authorization", got: req.Header.Get("Authorization"), want: ""},
		{name: "no cookie", got: req.Header.Get("Cookie"), want: ""},
		{name: "no other headers", got: req.Header.Get("X-Remote-User"), want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestProxyRelaysRefusal(t *testing.T) {
	be := startBackend(t, func(_ *http.Request, conn net.Conn, _ *bufio.Reader) {
		_, _ = io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Runtime: yes\r\nContent-Length: 12\r\nConnection: close\r\n\r\nnot allowed\n")
	})
	srv := httptest.NewServer(&upgradeProxy{target: be.url("/exec/x")})
	defer srv.Close()
	_, _, resp := dialUpgrade(t, srv, "/", nil)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || string(body) != "not allowed\n" {
		t.Errorf("got %d %q, want 403 %q", resp.StatusCode, body, "not allowed\n")
	}
	if resp.Header.Get("X-Runtime") != "yes" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("runtime headers not relayed: %v", resp.Header)
	}
}

func TestProxyPipesBothWays(t *testing.T) {
	check := goroutineBaseline(t)
	be := startBackend(t, upgradeAndEcho)
	srv := httptest.NewServer(&upgradeProxy{target: be.url("/exec/x"), idleTimeout: time.Minute})
	conn, br, resp := dialUpgrade(t, srv, "/", nil)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	if got := readN(t, conn, br, 5); got != "early" {
		t.Errorf("bytes sent with the 101: %q, want %q", got, "early")
	}
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB, more than one copy buffer
	go func() { _, _ = io.WriteString(conn, big) }()
	if got := readN(t, conn, br, len(big)); got != big {
		t.Errorf("echo of 1 MiB differs")
	}
	conn.Close()
	srv.Close()
	be.close()
	check()
}

func TestProxyClosesBothSides(t *testing.T) {
	tests := []struct {
		name        string
		idleTimeout time.Duration
		// end ends the stream from the outside; nil lets it idle out.
		end func(client net.Conn, backendConn net.Conn, cancel context.CancelFunc)
		// wantClientClosed: the client sees its connection closed.
		wantClientClosed bool
	}{
		{name: "client closes", end: func(c, _ net.Conn, _ context.CancelFunc) { c.Close() }},
		{name: "runtime closes", end: func(_, b net.Conn, _ context.CancelFunc) { b.Close() }, wantClientClosed: true},
		{name: "request context ends", end: func(_, _ net.Conn, cancel context.CancelFunc) { cancel() }, wantClientClosed: true},
		{name: "idle timeout", idleTimeout: 300 * time.Millisecond, wantClientClosed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := goroutineBaseline(t)
			backendConns := make(chan net.Conn, 1)
			backendSawEOF := make(chan struct{})
			be := startBackend(t, func(_ *http.Request, conn net.Conn, br *bufio.Reader) {
				_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test/1\r\n\r\n")
				backendConns <- conn
				_, _ = io.Copy(conn, br)
				close(backendSawEOF)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := httptest.NewUnstartedServer(&upgradeProxy{target: be.url("/x"), idleTimeout: tc.idleTimeout})
			srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
			srv.Start()
			client, br, resp := dialUpgrade(t, srv, "/", nil)
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d, want 101", resp.StatusCode)
			}
			backendConn := <-backendConns
			if _, err := io.WriteString(client, "ping"); err != nil {
				t.Fatal(err)
			}
			readN(t, client, br, 4)
			if tc.end != nil {
				tc.end(client, backendConn, cancel)
			}
			select {
			case <-backendSawEOF:
			case <-time.After(5 * time.Second):
				t.Fatal("runtime side still open")
			}
			if tc.wantClientClosed {
				expectClosed(t, client, br, 5*time.Second)
			}
			client.Close()
			srv.Close()
			be.close()
			check()
		})
	}
}

func TestProxyIdleTimeoutSparesActiveStreams(t *testing.T) {
	be := startBackend(t, upgradeAndEcho)
	srv := httptest.NewServer(&upgradeProxy{target: be.url("/x"), idleTimeout: 300 * time.Millisecond})
	defer srv.Close()
	conn, br, _ := dialUpgrade(t, srv, "/", nil)
	readN(t, conn, br, 5)
	// Traffic every 100ms for four idle periods keeps the stream open.
	for i := range 12 {
		msg := fmt.Sprintf("%02d", i)
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if got := readN(t, conn, br, 2); got != msg {
			t.Fatalf("echo %q, want %q", got, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	expectClosed(t, conn, br, 3*time.Second)
}

func TestProxyErrors(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	silent := startBackend(t, func(_ *http.Request, conn net.Conn, _ *bufio.Reader) {
		_, _ = io.WriteString(conn, "garbage\r\n\r\n")
	})
	tests := []struct {
		name     string
		target   *url.URL
		wantBody string
	}{
		{name: "runtime not listening", target: &url.URL{Scheme: "http", Host: closedAddr, Path: "/exec/x"}, wantBody: "dial runtime streaming server"},
		{name: "runtime answers garbage", target: silent.url("/exec/x"), wantBody: "read upgrade response"},
		{name: "unsupported scheme", target: &url.URL{Scheme: "ftp", Host: closedAddr}, wantBody: `unsupported streaming URL scheme "ftp"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&upgradeProxy{target: tc.target})
			defer srv.Close()
			_, _, resp := dialUpgrade(t, srv, "/", nil)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("got %d %q, want 500 containing %q", resp.StatusCode, body, tc.wantBody)
			}
		})
	}
}

func TestIsUpgradeRequest(t *testing.T) {
	tests := []struct {
		name          string
		header        http.Header
		wantUpgrade   bool
		wantWebSocket bool
	}{
		{name: "none", header: http.Header{}},
		{name: "spdy", header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}, wantUpgrade: true},
		{name: "token list", header: http.Header{"Connection": {"keep-alive, upgrade"}, "Upgrade": {"SPDY/3.1"}}, wantUpgrade: true},
		{name: "websocket", header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"WebSocket"}}, wantUpgrade: true, wantWebSocket: true},
		{name: "upgrade header alone", header: http.Header{"Upgrade": {"websocket"}}},
		{name: "keep-alive only", header: http.Header{"Connection": {"keep-alive"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{Header: tc.header}
			if got := isUpgradeRequest(r); got != tc.wantUpgrade {
				t.Errorf("isUpgradeRequest %v, want %v", got, tc.wantUpgrade)
			}
			if got := isWebSocketRequest(r); got != tc.wantWebSocket {
				t.Errorf("isWebSocketRequest %v, want %v", got, tc.wantWebSocket)
			}
		})
	}
}

// tlsBackend is an https runtime streaming server that upgrades and echoes.
func tlsBackend(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		upgradeAndEcho(r, conn, brw.Reader)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProxyTLS(t *testing.T) {
	be := tlsBackend(t)
	trusted := certPool(be.Certificate())
	tests := []struct {
		name       string
		tlsConfig  *tls.Config
		wantStatus int
		wantBody   string
	}{
		{name: "trusted runtime certificate", tlsConfig: &tls.Config{RootCAs: trusted}, wantStatus: http.StatusSwitchingProtocols},
		{name: "untrusted runtime certificate", wantStatus: http.StatusInternalServerError, wantBody: "certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target, _ := url.Parse(be.URL + "/exec/token")
			// The kubelet's port is TLS too: the hijacked connection is a *tls.Conn.
			front := httptest.NewTLSServer(&upgradeProxy{target: target, tlsConfig: tc.tlsConfig})
			defer front.Close()
			conn, err := tls.Dial("tcp", front.Listener.Addr().String(), &tls.Config{RootCAs: certPool(front.Certificate())})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.Close()
			req, _ := http.NewRequest(http.MethodGet, front.URL+"/", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "test/1")
			if err := req.Write(conn); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus != http.StatusSwitchingProtocols {
				body, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(body), tc.wantBody) {
					t.Errorf("body %q, want it to contain %q", body, tc.wantBody)
				}
				return
			}
			if _, err := io.WriteString(conn, "hi"); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, conn, br, 7); got != "earlyhi" {
				t.Errorf("stream carried %q, want %q", got, "earlyhi")
			}
		})
	}
}

func certPool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}
