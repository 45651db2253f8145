package streaming

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

const (
	// dialTimeout bounds connecting to the runtime's streaming server.
	dialTimeout = 30 * time.Second
	// handshakeTimeout bounds the upgrade exchange with the streaming
	// server, and relaying its answer when it refuses to upgrade.
	handshakeTimeout = 30 * time.Second
	copyBufferSize   = 32 << 10
)

// forwardedHeaders are the client headers the upgrade needs; Sec-WebSocket-*
// headers are forwarded too. Credentials the client sent the kubelet are not.
var forwardedHeaders = []string{"Upgrade", "X-Stream-Protocol-Version", "Origin", "User-Agent"}

// hopHeaders are not relayed from a streaming server's non-101 answer.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Content-Length"}

// upgradeProxy forwards an HTTP Upgrade request to a runtime streaming URL
// and, once the runtime switches protocols, pipes the client's connection
// and the runtime's together until either side closes.
type upgradeProxy struct {
	target *url.URL
	// idleTimeout closes a piped connection that carried no bytes either
	// way for that long; zero disables it.
	idleTimeout time.Duration
	// tlsConfig dials https targets; nil verifies against the system roots.
	tlsConfig *tls.Config
}

// isUpgradeRequest reports whether r asks for a protocol upgrade (a
// "Connection: upgrade" token), which both SPDY and WebSocket clients send.
func isUpgradeRequest(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade")
}

// isWebSocketRequest reports whether r is a WebSocket upgrade.
func isWebSocketRequest(r *http.Request) bool {
	return isUpgradeRequest(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get("Upgrade")), "websocket")
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func (p *upgradeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	logger := klog.FromContext(ctx)
	backend, err := p.dial(ctx)
	if err != nil {
		p.fail(w, fmt.Errorf("dial runtime streaming server %s: %w", p.target.Host, err))
		return
	}
	handedOff := false
	stopWatch := context.AfterFunc(ctx, func() { backend.Close() })
	defer func() {
		stopWatch()
		if !handedOff {
			backend.Close()
		}
	}()

	if err := backend.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		p.fail(w, fmt.Errorf("set handshake deadline: %w", err))
		return
	}
	req := p.backendRequest(r)
	if err := req.Write(backend); err != nil {
		p.fail(w, fmt.Errorf("send upgrade request to runtime streaming server %s: %w", p.target.Host, err))
		return
	}
	fromBackend := bufio.NewReader(backend)
	resp, err := http.ReadResponse(fromBackend, req)
	if err != nil {
		p.fail(w, fmt.Errorf("read upgrade response from runtime streaming server %s: %w", p.target.Host, err))
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		p.relay(w, resp)
		return
	}
	if err := backend.SetDeadline(time.Time{}); err != nil {
		p.fail(w, fmt.Errorf("clear handshake deadline: %w", err))
		return
	}

	client, clientBuf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.fail(w, fmt.Errorf("take over client connection: %w", err))
		return
	}
	handedOff = true
	if !stopWatch() {
		// ctx ended after the handshake: the backend is already closed.
		client.Close()
		backend.Close()
		return
	}
	logger.V(4).Info("Streaming connection upgraded", "protocol", resp.Header.Get("Upgrade"), "runtime", p.target.Host)
	p.pipe(ctx, client, clientBuf.Reader, backend, fromBackend, resp)
}

// fail answers a request that could not be proxied, as upstream: 500 with
// the error text.
func (p *upgradeProxy) fail(w http.ResponseWriter, err error) {
	klog.ErrorS(err, "Error while proxying request")
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// relay passes on the runtime's refusal to upgrade: its status, headers and
// body.
func (p *upgradeProxy) relay(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = slices.Clone(v)
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		klog.V(2).InfoS("Relaying streaming server response failed", "status", resp.StatusCode, "err", err)
	}
}

func (p *upgradeProxy) dial(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	host := p.target.Host
	switch p.target.Scheme {
	case "http":
		if p.target.Port() == "" {
			host = net.JoinHostPort(p.target.Hostname(), "80")
		}
		return d.DialContext(ctx, "tcp", host)
	case "https":
		if p.target.Port() == "" {
			host = net.JoinHostPort(p.target.Hostname(), "443")
		}
		cfg := &tls.Config{}
		if p.tlsConfig != nil {
			cfg = p.tlsConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = p.target.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		td := &tls.Dialer{NetDialer: d, Config: cfg}
		return td.DialContext(ctx, "tcp", host)
	default:
		return nil, fmt.Errorf("unsupported streaming URL scheme %q", p.target.Scheme)
	}
}

// backendRequest is the upgrade request sent to the runtime: the client's
// method and upgrade headers, the runtime URL's path and query.
func (p *upgradeProxy) backendRequest(r *http.Request) *http.Request {
	u := &url.URL{
		Scheme:   p.target.Scheme,
		Host:     p.target.Host,
		Path:     p.target.Path,
		RawPath:  p.target.RawPath,
		RawQuery: p.target.RawQuery,
	}
	h := make(http.Header)
	for _, k := range forwardedHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			h[k] = slices.Clone(v)
		}
	}
	for k, v := range r.Header {
		if strings.HasPrefix(k, "Sec-Websocket-") {
			h[k] = slices.Clone(v)
		}
	}
	h.Set("Connection", "Upgrade")
	return &http.Request{
		Method:     r.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       p.target.Host,
	}
}

// pipe sends the runtime's 101 answer to the client, then copies bytes both
// ways until either side closes, the connection idles out or ctx ends. It
// returns once both copies have stopped and both connections are closed.
func (p *upgradeProxy) pipe(ctx context.Context, client net.Conn, fromClient io.Reader, backend net.Conn, fromBackend io.Reader, resp *http.Response) {
	logger := klog.FromContext(ctx)
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			backend.Close()
		})
	}
	defer closeBoth()
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()

	// The server may have set deadlines on the client connection.
	if err := client.SetDeadline(time.Time{}); err != nil {
		logger.V(2).Info("Clearing client connection deadline failed", "err", err)
		return
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	if err := resp.Header.Write(&head); err != nil {
		logger.V(2).Info("Encoding upgrade response failed", "err", err)
		return
	}
	head.WriteString("\r\n")
	if _, err := client.Write(head.Bytes()); err != nil {
		logger.V(2).Info("Writing upgrade response to client failed", "err", err)
		return
	}

	idle := newIdleWatch(p.idleTimeout, func() {
		logger.V(2).Info("Closing idle streaming connection", "idleTimeout", p.idleTimeout)
		closeBoth()
	})
	defer idle.stop()

	done := make(chan struct{}, 2)
	go func() { copyActive(backend, fromClient, idle); done <- struct{}{} }()
	go func() { copyActive(client, fromBackend, idle); done <- struct{}{} }()
	<-done
	closeBoth()
	<-done
	logger.V(4).Info("Streaming connection closed", "runtime", p.target.Host)
}

// copyActive copies src to dst, marking activity on idle, until either
// fails or src ends.
func copyActive(dst io.Writer, src io.Reader, idle *idleWatch) {
	buf := make([]byte, copyBufferSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			idle.touch()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				klog.V(5).InfoS("Streaming copy ended", "err", err)
			}
			return
		}
	}
}

// idleWatch calls onIdle once no activity was seen for timeout. A nil
// *idleWatch (timeout disabled) is valid and does nothing.
type idleWatch struct {
	timeout time.Duration
	start   time.Time
	last    atomic.Int64 // nanoseconds since start, monotonic
	onIdle  func()

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func newIdleWatch(timeout time.Duration, onIdle func()) *idleWatch {
	if timeout <= 0 {
		return nil
	}
	w := &idleWatch{timeout: timeout, start: time.Now(), onIdle: onIdle}
	w.mu.Lock()
	w.timer = time.AfterFunc(timeout, w.check)
	w.mu.Unlock()
	return w
}

func (w *idleWatch) touch() {
	if w != nil {
		w.last.Store(int64(time.Since(w.start)))
	}
}

func (w *idleWatch) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	idleFor := time.Since(w.start) - time.Duration(w.last.Load())
	if idleFor < w.timeout {
		w.timer.Reset(w.timeout - idleFor)
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	w.onIdle()
}

func (w *idleWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}
