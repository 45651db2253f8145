package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the kubelets (ours and upstream) put on sandboxes and containers.
const (
	labelPodName      = "io.kubernetes.pod.name"
	labelPodNamespace = "io.kubernetes.pod.namespace"
	labelPodUID       = "io.kubernetes.pod.uid"
	labelContainer    = "io.kubernetes.container.name"
)

type cri struct {
	conn *grpc.ClientConn
	rs   runtimeapi.RuntimeServiceClient
	is   runtimeapi.ImageServiceClient
}

func dialCRI(endpoint string) (*cri, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "unix://" + endpoint
	}
	conn, err := grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return nil, err
	}
	c := &cri{conn: conn, rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn)}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c.rs.Version(ctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("CRI at %s does not answer: %w", endpoint, err)
	}
	return c, nil
}

func (c *cri) version() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.rs.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return fmt.Sprintf("%s %s (CRI %s)", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
}

func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// runningContainers lists RUNNING containers of the pod with the given
// (full, node-suffixed) name.
func (c *cri) runningContainers(ctx context.Context, podName string) ([]*runtimeapi.Container, error) {
	resp, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{labelPodName: podName},
	}})
	if err != nil {
		return nil, err
	}
	return resp.Containers, nil
}

// readySandboxes lists READY sandboxes of the pod with the given name.
func (c *cri) readySandboxes(ctx context.Context, podName string) ([]*runtimeapi.PodSandbox, error) {
	resp, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{labelPodName: podName},
	}})
	if err != nil {
		return nil, err
	}
	return resp.Items, nil
}

// timeline is what the runtime itself recorded about a pod's start: when
// its (newest) sandbox and container were created and when the container
// started, in the runtime's clock (the same machine's clock as ours).
type timeline struct {
	SandboxCreated   time.Time
	ContainerCreated time.Time
	ContainerStarted time.Time
}

func (c *cri) podTimeline(podName string) (timeline, error) {
	ctx, cancel := callCtx()
	defer cancel()
	var tl timeline
	sbs, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{labelPodName: podName}}})
	if err != nil {
		return tl, err
	}
	for _, sb := range sbs.Items {
		if t := time.Unix(0, sb.CreatedAt); t.After(tl.SandboxCreated) {
			tl.SandboxCreated = t
		}
	}
	cs, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{labelPodName: podName}}})
	if err != nil {
		return tl, err
	}
	var newest *runtimeapi.Container
	for _, ct := range cs.Containers {
		if newest == nil || ct.CreatedAt > newest.CreatedAt {
			newest = ct
		}
	}
	if newest == nil {
		return tl, fmt.Errorf("no container for pod %s", podName)
	}
	tl.ContainerCreated = time.Unix(0, newest.CreatedAt)
	st, err := c.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: newest.Id})
	if err != nil {
		return tl, err
	}
	tl.ContainerStarted = time.Unix(0, st.GetStatus().GetStartedAt())
	return tl, nil
}

// removePodsWithSuffix stops and removes every sandbox (with its
// containers) whose pod name ends with "-"+suffix; suffix "" removes every
// sandbox (only for a runtime private to the benchmark). It returns how many
// sandboxes it removed and how many of those were still READY.
func (c *cri) removePodsWithSuffix(suffix string) (n, ready int, err error) {
	ctx, cancel := callCtx()
	defer cancel()
	sbs, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return 0, 0, err
	}
	for _, sb := range sbs.Items {
		if suffix != "" && !strings.HasSuffix(sb.GetLabels()[labelPodName], "-"+suffix) {
			continue
		}
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
		// A call timeout per sandbox: with hundreds on a loaded runtime one
		// for all of them runs out.
		sctx, scancel := callCtx()
		err := c.removeSandbox(sctx, sb.Id)
		scancel()
		if err != nil {
			return n, ready, err
		}
		n++
	}
	return n, ready, nil
}

// removeSandbox stops and removes the sandbox's containers, then the
// sandbox.
func (c *cri) removeSandbox(ctx context.Context, id string) error {
	cs, err := c.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: id}})
	if err != nil {
		return err
	}
	for _, ct := range cs.Containers {
		if _, err := c.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ct.Id}); err != nil && !isNotFound(err) {
			return fmt.Errorf("StopContainer %s: %w", ct.Id, err)
		}
		if _, err := c.rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ct.Id}); err != nil && !isNotFound(err) {
			return fmt.Errorf("RemoveContainer %s: %w", ct.Id, err)
		}
	}
	if _, err := c.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
		return fmt.Errorf("StopPodSandbox %s: %w", id, err)
	}
	if _, err := c.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
		return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// rawRun is one RunPodSandbox + CreateContainer + StartContainer, timed.
type rawRun struct {
	Began                         time.Time `json:"-"`
	Sandbox, Create, Start, Total time.Duration
	// Seen is when the ListContainers poller (every 10 ms, as in the
	// kubelet runs, whose load on the runtime it reproduces) first saw
	// the container RUNNING.
	Seen time.Duration
}

// rawPod is one pod rawStart sends straight to the runtime.
type rawPod struct {
	Name, Node, LogRoot, Image string
	Command                    []string // the container's command; nil runs the image's own
	Poll                       bool     // time when ListContainers first shows it RUNNING (polled every 10 ms)
}

// rawStart starts a pod (sandbox and one container) directly through the
// CRI, with the configuration a kubelet sends for it (namespaces, labels,
// log paths), and returns the timings and the sandbox id.
func (c *cri) rawStart(p rawPod) (rawRun, string, error) {
	name, node, logRoot, image := p.Name, p.Node, p.LogRoot, p.Image
	var r rawRun
	podName := name + "-" + node
	uid := "bench-raw-" + randHex(8)
	logDir := filepath.Join(logRoot, "default_"+podName+"_"+uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return r, "", err
	}
	labels := map[string]string{labelPodName: podName, labelPodNamespace: "default", labelPodUID: uid}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: podName, Uid: uid, Namespace: "default"},
		Hostname:     podName,
		LogDirectory: logDir,
		Labels:       labels,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD,
					Pid:     runtimeapi.NamespaceMode_CONTAINER,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
	ctx, cancel := callCtx()
	defer cancel()
	t0 := time.Now()
	seen := make(chan time.Time, 1)
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	go func() {
		if !p.Poll {
			close(seen)
			return
		}
		at, err := pollUntil(pollCtx, 10*time.Millisecond, func() bool {
			cs, err := c.runningContainers(pollCtx, podName)
			return err == nil && len(cs) > 0
		})
		if err == nil {
			seen <- at
		}
		close(seen)
	}()
	sb, err := c.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		return r, "", fmt.Errorf("RunPodSandbox: %w", err)
	}
	t1 := time.Now()
	cLabels := map[string]string{labelContainer: "sleep"}
	for k, v := range labels {
		cLabels[k] = v
	}
	ct, err := c.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Command:  p.Command,
			LogPath:  "sleep/0.log",
			Labels:   cLabels,
			Linux: &runtimeapi.LinuxContainerConfig{
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					NamespaceOptions: &runtimeapi.NamespaceOption{
						Network: runtimeapi.NamespaceMode_POD,
						Pid:     runtimeapi.NamespaceMode_CONTAINER,
						Ipc:     runtimeapi.NamespaceMode_POD,
					},
				},
			},
		},
		SandboxConfig: sbCfg,
	})
	if err != nil {
		return r, sb.PodSandboxId, fmt.Errorf("CreateContainer: %w", err)
	}
	t2 := time.Now()
	if _, err := c.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ct.ContainerId}); err != nil {
		return r, sb.PodSandboxId, fmt.Errorf("StartContainer: %w", err)
	}
	t3 := time.Now()
	r = rawRun{Began: t0, Sandbox: t1.Sub(t0), Create: t2.Sub(t1), Start: t3.Sub(t2), Total: t3.Sub(t0)}
	select {
	case at, ok := <-seen:
		if ok {
			r.Seen = at.Sub(t0)
		}
	case <-time.After(10 * time.Second):
	}
	return r, sb.PodSandboxId, nil
}

// imagePresent reports whether the runtime holds image.
func (c *cri) imagePresent(image string) (bool, error) {
	ctx, cancel := callCtx()
	defer cancel()
	st, err := c.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return false, err
	}
	return st.Image != nil, nil
}
