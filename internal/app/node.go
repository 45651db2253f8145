package app

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/pods/admission"
)

// nodeInputs gathers what the Node object and its status are computed
// from: static facts read once at start, health and images asked for on
// every call.
type nodeInputs struct {
	static  nodestatus.Inputs
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
	pleg    func() error
	// pressure reports the eviction manager's node conditions; may be nil.
	pressure func() []v1.NodeConditionType
	// storage reports the volume plugins' readiness and the volumes in
	// use; may be nil.
	storage *storage
}

func newNodeInputs(cfg *kubeletconfig.KubeletConfiguration, flags options.KubeletFlags, nodeName string, hostIPs []string,
	runtimeVersion string, rs runtimeapi.RuntimeServiceClient, is runtimeapi.ImageServiceClient, pleg func() error) (*nodeInputs, error) {
	machine, err := nodestatus.ReadMachineInfo(flags.RootDirectory)
	if err != nil {
		return nil, fmt.Errorf("read machine information: %w", err)
	}
	sysRes, err := resourceList(cfg.SystemReserved)
	if err != nil {
		return nil, fmt.Errorf("systemReserved: %w", err)
	}
	kubeRes, err := resourceList(cfg.KubeReserved)
	if err != nil {
		return nil, fmt.Errorf("kubeReserved: %w", err)
	}
	hostname, _ := os.Hostname()
	if flags.HostnameOverride != "" {
		hostname = nodeName
	}
	maxImages := int32(50)
	if cfg.NodeStatusMaxImages != nil {
		maxImages = *cfg.NodeStatusMaxImages
	}
	return &nodeInputs{
		static: nodestatus.Inputs{
			NodeName: nodeName, Hostname: hostname, NodeIPs: hostIPs, Machine: machine,
			RuntimeVersion: runtimeVersion, KubeletVersion: options.Version, MaxImages: maxImages,
			MaxPods: cfg.MaxPods, PodsPerCore: cfg.PodsPerCore, SystemReserved: sysRes, KubeReserved: kubeRes,
			EvictionHard: cfg.EvictionHard, KubeletPort: cfg.Port, Labels: flags.NodeLabels, Taints: cfg.RegisterWithTaints,
			ProviderID: cfg.ProviderID, ControllerAttachDetach: derefBool(cfg.EnableControllerAttachDetach, true),
		},
		runtime: rs, images: is, pleg: pleg,
	}, nil
}

func resourceList(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, v, err)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

// Inputs returns fresh inputs: runtime health and images from the CRI.
func (n *nodeInputs) Inputs(ctx context.Context) (nodestatus.Inputs, error) {
	in := n.static
	resp, err := n.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	rs := nodestatus.FromRuntimeStatus(resp, err)
	in.RuntimeErr, in.NetworkErr, in.RuntimeHandlers, in.Features = rs.RuntimeErr, rs.NetworkErr, rs.Handlers, rs.Features
	if n.pleg != nil {
		in.PLEGErr = n.pleg()
	}
	if n.pressure != nil {
		for _, c := range n.pressure() {
			switch c {
			case v1.NodeMemoryPressure:
				in.MemoryPressure = true
			case v1.NodeDiskPressure:
				in.DiskPressure = true
			case v1.NodePIDPressure:
				in.PIDPressure = true
			}
		}
	}
	if n.storage != nil {
		in.StorageErr = n.storage.err()
		in.VolumesInUse = n.storage.csi.VolumesInUse()
		if in.VolumesInUse == nil {
			in.VolumesInUse = []v1.UniqueVolumeName{}
		}
	}
	if imgs, err := n.images.ListImages(ctx, &runtimeapi.ListImagesRequest{}); err == nil {
		for _, img := range imgs.Images {
			names := append(append([]string{}, img.RepoTags...), img.RepoDigests...)
			if len(names) == 0 {
				continue
			}
			sort.Strings(names)
			in.Images = append(in.Images, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
		}
	} else {
		klog.V(2).InfoS("Cannot list images for the node status", "err", err)
	}
	return in, nil
}

// localNode is the Node as this kubelet computes it, for admission before
// (or without) an API server.
func (n *nodeInputs) localNode(now time.Time) *v1.Node {
	node := nodestatus.NewNode(n.static)
	nodestatus.SetStatus(node, n.static, now)
	return node
}

// nodeState holds the Node the kubelet last registered or read.
type nodeState struct {
	mu      sync.RWMutex
	node    *v1.Node
	trigger func() // asks for a node status update now; nil in standalone mode
	// fromAPI returns the Node as last read from or written to the API
	// server (nil in standalone mode).
	fromAPI func() (*v1.Node, bool)
}

func (s *nodeState) setFromAPI(f func() (*v1.Node, bool)) {
	s.mu.Lock()
	s.fromAPI = f
	s.mu.Unlock()
}

// latest is the Node as the API server last had it, nil before the node
// status loop has one (or in standalone mode).
func (s *nodeState) latest() *v1.Node {
	s.mu.RLock()
	f := s.fromAPI
	s.mu.RUnlock()
	if f == nil {
		return nil
	}
	n, ok := f()
	if !ok {
		return nil
	}
	return n
}

func (s *nodeState) setTrigger(f func()) {
	s.mu.Lock()
	s.trigger = f
	s.mu.Unlock()
}

// triggerStatus asks for the node status to be sent now (pressure changed).
func (s *nodeState) triggerStatus() {
	s.mu.RLock()
	f := s.trigger
	s.mu.RUnlock()
	if f != nil {
		f()
	}
}

func (s *nodeState) set(n *v1.Node) {
	s.mu.Lock()
	s.node = n
	s.mu.Unlock()
}

func (s *nodeState) get() *v1.Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.node
}

func (s *nodeState) uid() types.UID {
	if n := s.get(); n != nil {
		return n.UID
	}
	return ""
}

// admitter is the dispatcher's admission check, in upstream's handler
// order: the eviction manager's pressure check, then sysctls, then the
// predicates against the current Node.
func admitter(sysctls *admission.SysctlAllowlist, node func() *v1.Node, pressure func(*v1.Pod) (bool, string, string)) func(p *v1.Pod, active []*v1.Pod) (bool, string, string) {
	return func(p *v1.Pod, active []*v1.Pod) (bool, string, string) {
		if pressure != nil {
			if ok, reason, msg := pressure(p); !ok {
				return false, reason, msg
			}
		}
		if r := sysctls.Admit(p); !r.Admit {
			return r.Admit, r.Reason, r.Message
		}
		r := admission.Admit(p, node(), active)
		return r.Admit, r.Reason, r.Message
	}
}

// sysctlAllowlist is the safe sysctls for this kernel plus
// allowedUnsafeSysctls; a bad pattern stops the kubelet, as upstream.
func sysctlAllowlist(allowedUnsafe []string, kernelRelease string) (*admission.SysctlAllowlist, error) {
	w, err := admission.NewSysctlAllowlist(append(admission.SafeSysctls(kernelRelease), allowedUnsafe...))
	if err != nil {
		return nil, fmt.Errorf("allowedUnsafeSysctls: %w", err)
	}
	return w, nil
}
