package admission

import (
	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// bindAllIP is the host IP an empty hostIP means: every address.
const bindAllIP = "0.0.0.0"

// hostPort is one (host IP, protocol, port) binding.
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

// hostPorts lists the host ports a pod binds for its whole life: those of
// regular containers and of restartable init containers (sidecars). Ordinary
// init containers are left out. An empty IP means 0.0.0.0, an empty protocol
// TCP.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(ports []v1.ContainerPort) {
		for _, p := range ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.ip == "" {
				hp.ip = bindAllIP
			}
			if hp.protocol == "" {
				hp.protocol = v1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			add(pod.Spec.InitContainers[i].Ports)
		}
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].Ports)
	}
	return out
}

// portsFit reports whether none of the pod's host ports is taken by another
// pod. Ports clash when protocol and port are equal and the IPs are equal or
// either side binds 0.0.0.0. A pod's own ports never clash with each other.
func portsFit(pod *v1.Pod, others []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return true
	}
	for _, o := range others {
		for _, used := range hostPorts(o) {
			for _, w := range want {
				if w.port == used.port && w.protocol == used.protocol &&
					(w.ip == used.ip || w.ip == bindAllIP || used.ip == bindAllIP) {
					return false
				}
			}
		}
	}
	return true
}
