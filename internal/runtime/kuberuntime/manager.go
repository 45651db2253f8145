package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
	"github.com/seed-kubelet/kubelet/internal/backoff"
	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/metrics"
	"github.com/seed-kubelet/kubelet/internal/pods/allocation"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// Waiting reasons upstream reports for containers that could not start.
const (
	ReasonCrashLoopBackOff     = "CrashLoopBackOff"
	ReasonCreateConfigError    = "CreateContainerConfigError"
	ReasonCreateContainerError = "CreateContainerError"
	ReasonRunContainerError    = "RunContainerError"
	ReasonPreStartHookError    = "PreStartHookError"
	ReasonPostStartHookError   = "PostStartHookError"
	ReasonContainerCreating    = "ContainerCreating"
	ReasonPodInitializing      = "PodInitializing"
)

// MinGracePeriod is the shortest grace period a container is given to stop.
const MinGracePeriod int64 = 2

// workerResizeRetry is how soon a resize that failed is tried again.
const workerResizeRetry = 10 * time.Second

// Config is what a Manager needs.
type Config struct {
	Runtime runtimeapi.RuntimeServiceClient // required
	Images  *ImagePuller                    // required
	Clock   clock.Clock                     // required
	// Recorder receives container and sandbox events. Required.
	Recorder events.Recorder
	// Spec holds what criconfig needs to render sandbox and container configs.
	Spec criconfig.Options
	// PodsDir is <root-dir>/pods, for per-pod files (etc-hosts, termination logs).
	PodsDir string
	// ContainerLogsDir holds the /var/log/containers symlinks; "" disables them.
	ContainerLogsDir string
	// DeadContainerMinAge: PruneContainers keeps dead instances younger
	// than this (--minimum-container-ttl-duration).
	DeadContainerMinAge time.Duration
	// CleanLogs removes a dead container's log files before it is removed
	// (the log manager's Clean); nil removes them directly.
	CleanLogs func(ctx context.Context, containerID string) error
	// Mounts computes extra mounts for a container (volumes); may be nil.
	Mounts func(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error)
	// Devices computes a container's block devices (volumeDevices); may be nil.
	Devices func(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Device, error)
	// TearDownVolumes unmounts what Mounts mounted for a pod (subPath
	// binds, tmpfs, plugin volumes) before its directory is removed, for
	// pods of this or an earlier kubelet process; may be nil.
	TearDownVolumes func(uid string) error
	// PodHasVolumes reports whether an orphaned pod directory still holds
	// plugin volumes whose teardown runs apart (CleanupPodVolumes in the
	// housekeeping); such a directory is left until they are gone. May be
	// nil.
	PodHasVolumes func(uid string) bool
	// RunHook runs a postStart or preStop handler within timeout; nil
	// means lifecycle hooks are not run.
	RunHook func(ctx context.Context, h *v1.LifecycleHandler, c *v1.Container, containerID, podIP string, timeout time.Duration) error
	// Credentials supplies registry credentials; may be nil.
	Credentials PullCredentials
	// HostIPs are the node addresses for status.hostIP(s) env vars.
	HostIPs []string
	// RuntimeClasses resolves a pod's runtimeClassName to the handler its
	// sandbox runs with (RunPodSandbox runtime_handler); nil, in
	// standalone mode as upstream, runs every pod with the default
	// handler and warns about a runtimeClassName.
	RuntimeClasses RuntimeHandlerResolver
	// PodCgroups creates each pod's cgroup before its sandbox (the
	// sandbox's cgroup parent) and removes it with the pod; nil leaves the
	// cgroup parent as Spec.CgroupParent says.
	PodCgroups PodCgroups
	// Actuated records the resources applied to each container and pod
	// cgroup (the actuated_pods_state checkpoint); nil turns in-place
	// resize off.
	Actuated *allocation.State
	// PodResizer resizes pod cgroups in place; nil resizes containers only.
	PodResizer PodResizer
	// Metrics receives kubelet_pod_resize_duration_milliseconds and the
	// user-namespaced pod counts; may be nil.
	Metrics *metrics.Metrics
	// UserNamespaces releases a removed pod's user namespace range and
	// cleans up those of orphans; may be nil.
	UserNamespaces UserNamespaces
}

// UserNamespaces is what the runtime manager needs of the user namespace
// manager (the ranges of hostUsers: false pods).
type UserNamespaces interface {
	Release(uid types.UID)
	CleanupOrphans(keep map[types.UID]bool)
}

// RuntimeHandlerResolver is upstream's runtimeclass manager as the runtime
// manager sees it (runtimeclass.Manager).
type RuntimeHandlerResolver interface {
	// LookupRuntimeHandler returns the CRI handler of the named class ("" for
	// none); an unknown class is an apierrors NotFound error.
	LookupRuntimeHandler(ctx context.Context, runtimeClassName *string) (string, error)
}

// PodCgroups is what the runtime manager needs of the container manager.
type PodCgroups interface {
	// EnsurePod creates the pod's cgroup when missing and returns the
	// cgroup parent for its sandbox.
	EnsurePod(pod *v1.Pod) (string, error)
	// RemovePod removes the pod's cgroup.
	RemovePod(uid types.UID) error
}

// Manager acts on the runtime for pods. It is safe for concurrent use on
// different pods; callers never sync one pod twice at once.
type Manager struct {
	cfg     Config
	crash   *flowcontrol.Backoff
	puller  *ImagePuller
	runtime runtimeapi.RuntimeServiceClient
}

// NewManager returns a Manager.
func NewManager(cfg Config) *Manager {
	return &Manager{cfg: cfg, crash: backoff.NewCrashLoop(cfg.Clock), puller: cfg.Images, runtime: cfg.Runtime}
}

// ContainerFailure is why a container could not be started in a sync; the
// status manager shows it as the container's waiting reason.
type ContainerFailure struct {
	Reason  string
	Message string
}

// SyncResult is what one SyncPod did.
type SyncResult struct {
	// Changed is true when anything was created, started or killed.
	Changed bool
	// Failures by container name (init and app containers).
	Failures map[string]ContainerFailure
	// Started names the containers started by this sync.
	Started []string
	// RequeueAfter, when positive, is when the pod should be synced again
	// (the earliest back-off expiry).
	RequeueAfter time.Duration
	// Err is the first error that stopped the sync.
	Err error
	// ResizeErr is why an in-place resize could not be done (the sync
	// goes on; the next one tries again), for PodResizeInProgress.
	ResizeErr error
	// Resized is true when an in-place resize was done.
	Resized bool
}

func (r *SyncResult) fail(name, reason, msg string) {
	if r.Failures == nil {
		r.Failures = map[string]ContainerFailure{}
	}
	r.Failures[name] = ContainerFailure{Reason: reason, Message: msg}
	if r.Err == nil {
		r.Err = fmt.Errorf("container %q: %s: %s", name, reason, msg)
	}
}

func (r *SyncResult) requeue(d time.Duration) {
	if d > 0 && (r.RequeueAfter == 0 || d < r.RequeueAfter) {
		r.RequeueAfter = d
	}
}

// SyncPod brings the runtime in line with in.Pod, given in.Status from
// GetPodStatus and what the prober says (see Inputs).
func (m *Manager) SyncPod(ctx context.Context, in Inputs) SyncResult {
	var res SyncResult
	pod, st := in.Pod, in.Status
	if st == nil {
		st = &PodStatus{}
	}
	if in.Actuated == nil {
		m.adoptRunning(pod, st)
		in.Actuated = m.Actuated(pod)
	}
	actions := ComputePodActions(in)
	klog.V(4).InfoS("Computed pod actions", "pod", klog.KObj(pod), "actions", actions)
	if actions.Empty() {
		return res
	}
	res.Changed = true
	if actions.KillPod {
		if actions.CreateSandbox && len(st.Sandboxes) > 0 {
			m.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.SandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		if err := m.KillPod(ctx, pod, st, nil); err != nil {
			res.Err = err
			return res
		}
		if !actions.CreateSandbox {
			return res
		}
	}
	for _, k := range actions.ContainersToKill {
		if err := m.killContainer(ctx, pod, k.ID, k.Name, k.Message, firstIP(st), k.GracePeriod); err != nil {
			res.Err = err
			return res
		}
	}

	sandboxID := actions.SandboxID
	spec := m.cfg.Spec
	if m.cfg.PodCgroups != nil {
		parent, err := m.cfg.PodCgroups.EnsurePod(pod)
		if err != nil {
			res.Err = fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
			return res
		}
		spec.CgroupParent = parent
	}
	if actions.CreateSandbox && pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers && m.cfg.Metrics != nil {
		// As upstream: counted when its sandbox is to be created, and an
		// error when this sync fails (the config, the sandbox, a container).
		m.cfg.Metrics.StartedUserNamespacedPods.Inc()
		defer func() {
			if res.Err != nil || len(res.Failures) > 0 {
				m.cfg.Metrics.StartedUserNamespacedPodsErrors.Inc()
			}
		}()
	}
	sandboxConfig, warnings, err := criconfig.SandboxConfig(pod, actions.Attempt, spec)
	if err != nil {
		// As upstream, whose createPodSandbox fails with the config error.
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedCreatePodSbx, "Failed to create pod sandbox: %v", err)
		res.Err = fmt.Errorf("generate sandbox config: %w", err)
		return res
	}
	podIPs := st.IPs
	if actions.CreateSandbox {
		if name := pod.Spec.RuntimeClassName; m.cfg.RuntimeClasses == nil && name != nil && *name != "" && actions.Attempt == 0 {
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Unsupported,
				"runtimeClassName %q is ignored: without an API server there are no RuntimeClasses to resolve it, so the pod runs with the runtime's default handler (as upstream's kubelet does)", *name)
		}
		for _, w := range warnings {
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, w.Reason, "%s", w.Message)
		}
		sandboxID, podIPs, err = m.createSandbox(ctx, pod, sandboxConfig)
		if err != nil {
			res.Err = err
			return res
		}
		if m.cfg.Actuated != nil && pod.Spec.Resources != nil {
			// The pod cgroup was made for the allocated pod-level resources.
			if err := m.cfg.Actuated.SetPodLevel(pod.UID, pod.Spec.Resources); err != nil {
				klog.ErrorS(err, "Cannot record the pod's actuated resources", "pod", klog.KObj(pod))
			}
		}
	}

	// Debug containers first, as upstream: they are there to look at a pod
	// whose other containers may be stuck.
	for _, i := range actions.EphemeralContainersToStart {
		ec := &pod.Spec.EphemeralContainers[i]
		target := ""
		if ec.TargetContainerName != "" {
			if t := st.FindContainer(ec.TargetContainerName); t != nil {
				target = t.ID
			}
		}
		m.startContainer(ctx, &res, pod, st, (*v1.Container)(&ec.EphemeralContainerCommon), sandboxID, sandboxConfig, podIPs, target)
	}
	startedInit := false
	for _, i := range actions.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		m.startContainer(ctx, &res, pod, st, c, sandboxID, sandboxConfig, podIPs, "")
		if !podutil.IsRestartableInitContainer(c) {
			// Regular init containers run one at a time: the next sync
			// (woken by its exit) starts the one after.
			startedInit = true
			break
		}
	}
	if !actions.Resize.Empty() {
		if err := m.resize(ctx, pod, actions.Resize, sandboxID, sandboxConfig); err != nil {
			klog.ErrorS(err, "Pod resize not actuated; the next sync tries again", "pod", klog.KObj(pod))
			res.ResizeErr = err
			res.requeue(workerResizeRetry)
		} else {
			res.Resized = true
		}
	}
	if startedInit {
		return res
	}
	for _, i := range actions.ContainersToStart {
		m.startContainer(ctx, &res, pod, st, &pod.Spec.Containers[i], sandboxID, sandboxConfig, podIPs, "")
	}
	return res
}

func (m *Manager) createSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, []string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", nil, fmt.Errorf("create pod log directory %s: %w", cfg.LogDirectory, err)
	}
	handler := ""
	if m.cfg.RuntimeClasses != nil {
		var err error
		if handler, err = m.cfg.RuntimeClasses.LookupRuntimeHandler(ctx, pod.Spec.RuntimeClassName); err != nil {
			// Upstream's event: "Failed to create pod sandbox:
			// runtimeclass.node.k8s.io "x" not found".
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedCreatePodSbx, "Failed to create pod sandbox: %v", err)
			return "", nil, fmt.Errorf("create pod sandbox: %w", err)
		}
		if handler != "" {
			klog.V(2).InfoS("Running pod with runtime handler", "pod", klog.KObj(pod), "runtimeHandler", handler)
		}
	}
	resp, err := m.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
	if err != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedCreatePodSbx, "Failed to create pod sandbox: %v", err)
		return "", nil, fmt.Errorf("create pod sandbox: %w", err)
	}
	id := resp.PodSandboxId
	st, err := m.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return "", nil, fmt.Errorf("status of new sandbox %s: %w", id, err)
	}
	var ips []string
	if ip := st.GetStatus().GetNetwork().GetIp(); ip != "" {
		ips = append(ips, ip)
	}
	for _, extra := range st.GetStatus().GetNetwork().GetAdditionalIps() {
		ips = append(ips, extra.GetIp())
	}
	klog.V(2).InfoS("Created pod sandbox", "pod", klog.KObj(pod), "sandboxID", id, "podIPs", ips)
	return id, ips, nil
}

// crashKey identifies a container for crash-loop back-off.
func crashKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s_%d", pod.Name, pod.Namespace, pod.UID, c.Name, criconfig.ContainerHash(c))
}

// startContainer starts one container, recording any failure in res. An
// ephemeral container with a target joins the process namespace of the
// target's container ID. It returns whether the container was started.
func (m *Manager) startContainer(ctx context.Context, res *SyncResult, pod *v1.Pod, st *PodStatus, c *v1.Container, sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, podIPs []string, targetID string) bool {
	prev := st.FindContainer(c.Name)
	restartCount := 0
	if prev != nil {
		restartCount = prev.RestartCount + 1
		if prev.State == StateExited {
			key := crashKey(pod, c)
			finished := prev.FinishedAt
			if left := backoff.Remaining(m.crash, key, finished); left > 0 {
				msg := fmt.Sprintf("back-off %v restarting failed container=%s pod=%s", m.crash.Get(key), c.Name, criconfig.PodDesc(pod))
				m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.BackOff, "Back-off restarting failed container %s in pod %s", c.Name, criconfig.PodDesc(pod))
				res.fail(c.Name, ReasonCrashLoopBackOff, msg)
				res.requeue(left)
				return false
			}
			m.crash.Next(key, finished)
		}
	}

	imageRef, err := m.puller.EnsureImage(ctx, pod, c, sandboxConfig, m.cfg.Credentials)
	if err != nil {
		reason, msg := splitReason(err)
		res.fail(c.Name, reason, msg)
		if errors.Is(err, ErrImagePull) {
			// Report the back-off state soon after a fresh failure, as
			// upstream's retry of a failed sync does, then retry at expiry.
			res.requeue(time.Second)
		}
		res.requeue(m.puller.RetryAfter(pod, c.Image))
		return false
	}

	imageUID, imageUsername, err := m.imageUser(ctx, imageRef)
	if err != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Error: %v", err)
		res.fail(c.Name, ReasonCreateConfigError, err.Error())
		return false
	}
	mounts, err := m.containerMounts(pod, c, podIPs)
	if err != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Error: %v", err)
		res.fail(c.Name, ReasonCreateConfigError, err.Error())
		return false
	}
	var devices []*runtimeapi.Device
	if m.cfg.Devices != nil && len(c.VolumeDevices) > 0 {
		if devices, err = m.cfg.Devices(pod, c); err != nil {
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Error: %v", err)
			res.fail(c.Name, ReasonCreateConfigError, err.Error())
			return false
		}
	}
	cfg, err := criconfig.ContainerConfig(ctx, criconfig.ContainerInputs{
		Pod: pod, Container: c, RestartCount: restartCount, PodIPs: podIPs, HostIPs: m.hostIPs(),
		ImageRef: imageRef, ImageUID: imageUID, ImageUsername: imageUsername, Mounts: mounts, Devices: devices, SandboxConfig: sandboxConfig,
		TargetContainerID: targetID,
	}, m.cfg.Spec)
	if err != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Error: %v", err)
		res.fail(c.Name, ReasonCreateConfigError, err.Error())
		return false
	}
	created, err := m.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sandboxConfig})
	if err != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Error: %v", err)
		res.fail(c.Name, ReasonCreateContainerError, err.Error())
		return false
	}
	id := created.ContainerId
	m.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.Created, "Created container: %s", c.Name)
	if _, err := m.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Failed, "Error: %v", err)
		res.fail(c.Name, ReasonRunContainerError, err.Error())
		return false
	}
	m.cfg.Recorder.Eventf(pod, v1.EventTypeNormal, events.Started, "Started container %s", c.Name)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && m.cfg.RunHook != nil {
		podIP := ""
		if len(podIPs) > 0 {
			podIP = podIPs[0]
		}
		if err := m.cfg.RunHook(ctx, c.Lifecycle.PostStart, c, id, podIP, time.Duration(GracePeriod(pod, nil))*time.Second); err != nil {
			msg := fmt.Sprintf("PostStartHook failed: %v", err)
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedPostStartHook, "%s", msg)
			// As upstream: a container whose postStart hook failed is killed.
			if kerr := m.killContainer(ctx, pod, id, c.Name, "FailedPostStartHook", podIP, nil); kerr != nil {
				klog.ErrorS(kerr, "Cannot kill container after its postStart hook failed", "pod", klog.KObj(pod), "container", c.Name)
			}
			res.fail(c.Name, ReasonPostStartHookError, msg)
			return false
		}
	}
	res.Started = append(res.Started, c.Name)
	m.recordStarted(pod, c, criconfig.IsEphemeral(pod, c.Name))
	m.linkContainerLog(pod, c.Name, id, filepath.Join(sandboxConfig.LogDirectory, cfg.LogPath))
	klog.V(2).InfoS("Started container", "pod", klog.KObj(pod), "container", c.Name, "containerID", id, "restartCount", restartCount)
	return true
}

// splitReason turns an image error into the waiting reason and message.
func splitReason(err error) (string, string) {
	for _, e := range []error{ErrImagePullBack, ErrImageNeverPull, ErrInvalidImage, ErrImageInspect, ErrImagePull} {
		if errors.Is(err, e) {
			msg := err.Error()
			prefix := e.Error() + ": "
			if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
				msg = msg[len(prefix):]
			}
			return e.Error(), msg
		}
	}
	return ReasonCreateContainerError, err.Error()
}

func (m *Manager) hostIPs() []string {
	return m.cfg.HostIPs
}

// PodDir is where the kubelet keeps a pod's files.
func (m *Manager) PodDir(uid types.UID) string { return filepath.Join(m.cfg.PodsDir, string(uid)) }

// containerMounts writes the per-container files the kubelet manages and
// returns their mounts plus the volume mounts.
func (m *Manager) containerMounts(pod *v1.Pod, c *v1.Container, podIPs []string) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	if m.cfg.Mounts != nil {
		vm, err := m.cfg.Mounts(pod, c)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, vm...)
	}
	podDir := m.PodDir(pod.UID)
	if (pod.Spec.HostNetwork || len(podIPs) > 0) && !hasMountAt(mounts, "/etc/hosts") {
		hosts := filepath.Join(podDir, "etc-hosts")
		content, err := criconfig.HostsFile(pod, podIPs, m.cfg.Spec)
		if err != nil {
			return nil, fmt.Errorf("render hosts file: %w", err)
		}
		if err := atomicfile.Write(hosts, content, 0o644); err != nil {
			return nil, fmt.Errorf("write hosts file: %w", err)
		}
		mounts = append(mounts, &runtimeapi.Mount{HostPath: hosts, ContainerPath: "/etc/hosts"})
	}
	if c.TerminationMessagePath != "" && !hasMountAt(mounts, c.TerminationMessagePath) {
		dir := filepath.Join(podDir, "containers", c.Name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("create container dir: %w", err)
		}
		f, err := os.CreateTemp(dir, "termlog-")
		if err != nil {
			return nil, fmt.Errorf("create termination log: %w", err)
		}
		f.Close()
		if err := os.Chmod(f.Name(), 0o666); err != nil {
			return nil, fmt.Errorf("chmod termination log: %w", err)
		}
		mounts = append(mounts, &runtimeapi.Mount{HostPath: f.Name(), ContainerPath: c.TerminationMessagePath})
	}
	return mounts, nil
}

func hasMountAt(mounts []*runtimeapi.Mount, path string) bool {
	for _, mnt := range mounts {
		if mnt.ContainerPath == path {
			return true
		}
	}
	return false
}

// linkContainerLog keeps the legacy /var/log/containers symlink that log
// shippers read: <pod>_<namespace>_<container>-<id>.log.
func (m *Manager) linkContainerLog(pod *v1.Pod, name, id, target string) {
	if m.cfg.ContainerLogsDir == "" {
		return
	}
	link := filepath.Join(m.cfg.ContainerLogsDir, fmt.Sprintf("%s_%s_%s-%s.log", pod.Name, pod.Namespace, name, id))
	if err := os.MkdirAll(m.cfg.ContainerLogsDir, 0o755); err == nil {
		err = os.Symlink(target, link)
		if err != nil && !os.IsExist(err) {
			klog.V(3).InfoS("Cannot link container log", "link", link, "err", err)
		}
	}
}
