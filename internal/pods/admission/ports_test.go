package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestPortsFit(t *testing.T) {
	port := func(ip string, proto v1.Protocol, hostPort int32) v1.ContainerPort {
		return v1.ContainerPort{ContainerPort: 80, HostIP: ip, Protocol: proto, HostPort: hostPort}
	}
	user := func(mutate func(*v1.Pod)) []*v1.Pod { return []*v1.Pod{testPod("u", nil, mutate)} }
	tests := []struct {
		name   string
		pod    *v1.Pod
		others []*v1.Pod
		want   bool
	}{
		{name: "no host ports", pod: testPod("p", nil), others: user(withPorts(port("", "TCP", 80))), want: true},
		{name: "same port and protocol", pod: testPod("p", nil, withPorts(port("", "TCP", 80))),
			others: user(withPorts(port("", "TCP", 80))), want: false},
		{name: "different protocol", pod: testPod("p", nil, withPorts(port("", "UDP", 80))),
			others: user(withPorts(port("", "TCP", 80))), want: true},
		{name: "empty protocol is TCP", pod: testPod("p", nil, withPorts(port("", "", 80))),
			others: user(withPorts(port("", "TCP", 80))), want: false},
		{name: "different port", pod: testPod("p", nil, withPorts(port("", "TCP", 81))),
			others: user(withPorts(port("", "TCP", 80))), want: true},
		{name: "different specific IPs", pod: testPod("p", nil, withPorts(port("10.0.0.1", "TCP", 80))),
			others: user(withPorts(port("10.0.0.2", "TCP", 80))), want: true},
		{name: "same specific IP", pod: testPod("p", nil, withPorts(port("10.0.0.1", "TCP", 80))),
			others: user(withPorts(port("10.0.0.1", "TCP", 80))), want: false},
		{name: "wanted 0.0.0.0 against a specific IP", pod: testPod("p", nil, withPorts(port("0.0.0.0", "TCP", 80))),
			others: user(withPorts(port("10.0.0.2", "TCP", 80))), want: false},
		{name: "wanted specific IP against an empty one", pod: testPod("p", nil, withPorts(port("10.0.0.1", "TCP", 80))),
			others: user(withPorts(port("", "TCP", 80))), want: false},
		{name: "ports without a host port are free", pod: testPod("p", nil, withPorts(port("", "TCP", 0))),
			others: user(withPorts(port("", "TCP", 0))), want: true},
		{name: "sidecar ports are held", pod: testPod("p", nil, withPorts(port("", "TCP", 80))),
			others: user(func(p *v1.Pod) {
				s := sidecar("proxy", nil)
				s.Ports = []v1.ContainerPort{port("", "TCP", 80)}
				p.Spec.InitContainers = []v1.Container{s}
			}), want: false},
		{name: "ordinary init container ports are not held", pod: testPod("p", nil, withPorts(port("", "TCP", 80))),
			others: user(func(p *v1.Pod) {
				c := ctr("setup", nil)
				c.Ports = []v1.ContainerPort{port("", "TCP", 80)}
				p.Spec.InitContainers = []v1.Container{c}
			}), want: true},
		{name: "a pod does not clash with itself", pod: testPod("p", nil, withPorts(port("", "TCP", 80), port("", "TCP", 80))),
			want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := portsFit(tc.pod, tc.others); got != tc.want {
				t.Errorf("portsFit() = %v, want %v", got, tc.want)
			}
		})
	}
}
