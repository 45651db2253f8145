package criconfig

import (
	"context"
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestContainerMetaRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		idx  int
		init bool
		rc   int
	}{
		{name: "plain container", pod: testPod(), rc: 0},
		{
			name: "restarted container with preStop, ports and deletion grace",
			pod: testPod(func(p *v1.Pod) {
				p.DeletionGracePeriodSeconds = ptr(int64(5))
				c := &p.Spec.Containers[0]
				c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
				c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
					HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromInt32(8080)},
				}}
				c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}}
			}),
			rc: 7,
		},
		{
			name: "init container without grace period",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = nil
				p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox", TerminationMessagePath: "/tmp/t"}}
			}),
			init: true, rc: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &tc.pod.Spec.Containers[tc.idx]
			wantType := ContainerTypeRegular
			if tc.init {
				c = &tc.pod.Spec.InitContainers[tc.idx]
				wantType = ContainerTypeInit
			}
			cfg, err := ContainerConfig(context.Background(), ContainerInputs{Pod: tc.pod, Container: c, RestartCount: tc.rc}, Options{})
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			got, err := ContainerMetaFrom(cfg.Labels, cfg.Annotations)
			if err != nil {
				t.Fatalf("ContainerMetaFrom: %v", err)
			}
			want := ContainerMeta{
				PodName: tc.pod.Name, PodNamespace: tc.pod.Namespace, PodUID: tc.pod.UID,
				ContainerName:             c.Name,
				Hash:                      ContainerHash(c),
				RestartCount:              tc.rc,
				TerminationMessagePath:    c.TerminationMessagePath,
				TerminationMessagePolicy:  c.TerminationMessagePolicy,
				PodTerminationGracePeriod: tc.pod.Spec.TerminationGracePeriodSeconds,
				PodDeletionGracePeriod:    tc.pod.DeletionGracePeriodSeconds,
				Ports:                     c.Ports,
				ContainerType:             wantType,
			}
			if c.Lifecycle != nil {
				want.PreStopHandler = c.Lifecycle.PreStop
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ContainerMetaFrom =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestContainerMetaFromTolerance(t *testing.T) {
	labels := ContainerLabels(testPod(), &testPod().Spec.Containers[0])
	tests := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		wantErr     bool
		check       func(t *testing.T, m ContainerMeta)
	}{
		{
			name:        "upstream-written annotations are read",
			labels:      labels,
			annotations: map[string]string{AnnotationContainerHash: "8e45cbd0", AnnotationContainerRestartCount: "3", AnnotationPodTerminationGracePeriod: "60"},
			check: func(t *testing.T, m ContainerMeta) {
				if m.Hash != 0x8e45cbd0 || m.RestartCount != 3 || m.PodTerminationGracePeriod == nil || *m.PodTerminationGracePeriod != 60 {
					t.Errorf("meta = %+v", m)
				}
			},
		},
		{
			name:        "malformed annotations leave zero values",
			labels:      labels,
			annotations: map[string]string{AnnotationContainerHash: "zz", AnnotationContainerRestartCount: "x", AnnotationPodTerminationGracePeriod: "y", AnnotationContainerPorts: "{"},
			check: func(t *testing.T, m ContainerMeta) {
				if m.Hash != 0 || m.RestartCount != 0 || m.PodTerminationGracePeriod != nil || m.Ports != nil || m.ContainerName != "app" {
					t.Errorf("meta = %+v", m)
				}
			},
		},
		{
			name:    "missing container name is not ours",
			labels:  map[string]string{LabelPodName: "a", LabelPodNamespace: "b", LabelPodUID: "c"},
			wantErr: true,
		},
		{name: "no labels at all", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ContainerMetaFrom(tc.labels, tc.annotations)
			if tc.wantErr {
				if !errors.Is(err, ErrNotManaged) {
					t.Fatalf("err = %v, want ErrNotManaged", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerMetaFrom: %v", err)
			}
			tc.check(t, m)
		})
	}
}

func TestSandboxMetaFromLabels(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		want    SandboxMeta
		wantErr bool
	}{
		{
			name:   "labels written by SandboxLabels, pod labels ignored",
			labels: SandboxLabels(testPod()),
			want:   SandboxMeta{PodName: "web", PodNamespace: "shop", PodUID: "uid-1"},
		},
		{name: "missing uid", labels: map[string]string{LabelPodName: "a", LabelPodNamespace: "b"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SandboxMetaFromLabels(tc.labels)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("meta = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSandboxLabelsIdentityWins(t *testing.T) {
	pod := testPod(func(p *v1.Pod) { p.Labels[LabelPodName] = "spoofed" })
	got := SandboxLabels(pod)
	if got[LabelPodName] != "web" || got["app"] != "web" {
		t.Errorf("labels = %v", got)
	}
	if pod.Labels[LabelPodName] != "spoofed" {
		t.Errorf("SandboxLabels mutated the pod's labels")
	}
}
