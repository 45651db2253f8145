package cri

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxMsgSize matches what runtimes send for large listings (16 MiB).
const maxMsgSize = 16 * 1024 * 1024

// Config is what Dial needs.
type Config struct {
	// RuntimeEndpoint is the CRI runtime socket, e.g.
	// unix:///run/containerd/containerd.sock. Required.
	RuntimeEndpoint string
	// ImageEndpoint is the image service socket; empty means RuntimeEndpoint.
	ImageEndpoint string
	// Timeout bounds every unary call (runtimeRequestTimeout). Required.
	Timeout time.Duration
	// Interceptors run around every unary call (metrics); optional.
	Interceptors []grpc.UnaryClientInterceptor
}

// Client is the runtime and image services of one runtime.
type Client struct {
	Runtime runtimeapi.RuntimeServiceClient
	Image   runtimeapi.ImageServiceClient
	conns   []*grpc.ClientConn
}

// Dial connects to the runtime. It does not wait for the runtime to answer.
func Dial(cfg Config) (*Client, error) {
	if cfg.RuntimeEndpoint == "" {
		return nil, fmt.Errorf("container runtime endpoint is empty")
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("runtime request timeout must be positive, got %v", cfg.Timeout)
	}
	rconn, err := dial(cfg.RuntimeEndpoint, cfg.Timeout, cfg.Interceptors)
	if err != nil {
		return nil, err
	}
	c := &Client{Runtime: runtimeapi.NewRuntimeServiceClient(rconn), conns: []*grpc.ClientConn{rconn}}
	iconn := rconn
	if cfg.ImageEndpoint != "" && cfg.ImageEndpoint != cfg.RuntimeEndpoint {
		if iconn, err = dial(cfg.ImageEndpoint, cfg.Timeout, cfg.Interceptors); err != nil {
			rconn.Close()
			return nil, err
		}
		c.conns = append(c.conns, iconn)
	}
	c.Image = runtimeapi.NewImageServiceClient(iconn)
	return c, nil
}

// Close closes the connections.
func (c *Client) Close() error {
	var first error
	for _, conn := range c.conns {
		if err := conn.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func dial(endpoint string, timeout time.Duration, extra []grpc.UnaryClientInterceptor) (*grpc.ClientConn, error) {
	target, err := Target(endpoint)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
		grpc.WithChainUnaryInterceptor(append([]grpc.UnaryClientInterceptor{deadlineInterceptor(timeout)}, extra...)...),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI endpoint %q: %w", endpoint, err)
	}
	return conn, nil
}

// Target turns a kubelet runtime endpoint into a gRPC target. Only unix
// sockets are supported, as upstream on Linux; a bare path means unix.
func Target(endpoint string) (string, error) {
	if strings.HasPrefix(endpoint, "/") {
		return "unix://" + endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("parse CRI endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "unix" {
		return "", fmt.Errorf("CRI endpoint %q: protocol %q not supported, only unix", endpoint, u.Scheme)
	}
	path := u.Path
	if path == "" {
		path = u.Opaque
	}
	if path == "" {
		return "", fmt.Errorf("CRI endpoint %q has no socket path", endpoint)
	}
	return "unix://" + path, nil
}

// deadlineInterceptor adds the default timeout to unary calls that have no
// deadline of their own (image pulls set a longer one themselves).
func deadlineInterceptor(timeout time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}
