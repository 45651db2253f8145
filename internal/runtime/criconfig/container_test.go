package criconfig

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerConfigBasics(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.Command = []string{"/bin/$(SHELL_NAME)", "$$(literal)"}
		c.Args = []string{"-c", "echo $(GREETING) $(UNKNOWN)"}
		c.WorkingDir = "/srv"
		c.Env = []v1.EnvVar{{Name: "SHELL_NAME", Value: "sh"}, {Name: "GREETING", Value: "hello"}}
		c.Stdin, c.StdinOnce, c.TTY = true, true, true
		c.Lifecycle = &v1.Lifecycle{StopSignal: ptr(v1.SIGUSR1)}
	})
	mounts := []*runtimeapi.Mount{{HostPath: "/var/lib/kubelet/pods/uid-1/etc-hosts", ContainerPath: "/etc/hosts"}}
	devices := []*runtimeapi.Device{{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}}
	in := ContainerInputs{
		Pod: pod, Container: &pod.Spec.Containers[0], RestartCount: 4,
		ImageRef: "sha256:abc", Mounts: mounts, Devices: devices,
		Annotations: map[string]string{"device.plugin/x": "1", AnnotationContainerHash: "spoofed"},
	}
	cfg, err := ContainerConfig(context.Background(), in, Options{})
	if err != nil {
		t.Fatalf("ContainerConfig: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"metadata", []any{cfg.Metadata.GetName(), cfg.Metadata.GetAttempt()}, []any{"app", uint32(4)}},
		{"image", cfg.Image.GetImage(), "sha256:abc"},
		{"user specified image", cfg.Image.GetUserSpecifiedImage(), "nginx:1.27"},
		{"command", cfg.Command, []string{"/bin/sh", "$(literal)"}},
		{"args", cfg.Args, []string{"-c", "echo hello $(UNKNOWN)"}},
		{"working dir", cfg.WorkingDir, "/srv"},
		{"log path", cfg.LogPath, "app/4.log"},
		{"stdin", []bool{cfg.Stdin, cfg.StdinOnce, cfg.Tty}, []bool{true, true, true}},
		{"stop signal", cfg.StopSignal, runtimeapi.Signal_SIGUSR1},
		{"labels", cfg.Labels, map[string]string{LabelPodName: "web", LabelPodNamespace: "shop", LabelPodUID: "uid-1", LabelContainerName: "app"}},
		{"extra annotation kept", cfg.Annotations["device.plugin/x"], "1"},
		{"kubelet annotation wins", cfg.Annotations[AnnotationContainerHash], hexHash(&pod.Spec.Containers[0])},
		{"grace period annotation", cfg.Annotations[AnnotationPodTerminationGracePeriod], "30"},
		{"mounts passed through", len(cfg.Mounts) == 1 && cfg.Mounts[0] == mounts[0], true},
		{"devices passed through", len(cfg.Devices) == 1 && proto.Equal(cfg.Devices[0], devices[0]), true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestContainerConfigImageFallback(t *testing.T) {
	pod := testPod()
	cfg, err := ContainerConfig(context.Background(), ContainerInputs{Pod: pod, Container: &pod.Spec.Containers[0]}, Options{})
	if err != nil {
		t.Fatalf("ContainerConfig: %v", err)
	}
	if cfg.Image.Image != "nginx:1.27" || cfg.Command != nil || cfg.Args != nil {
		t.Errorf("image %q command %v args %v", cfg.Image.Image, cfg.Command, cfg.Args)
	}
}

func TestContainerConfigCommandUsesAllEnvSources(t *testing.T) {
	src := &fakeEnvSource{
		configMaps: map[string]map[string]string{"cfg": {"PORT": "8080"}},
		services:   map[string]string{"API_SERVICE_HOST": "10.96.0.3"},
	}
	pod := testPod(func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
		c.Env = []v1.EnvVar{fieldRef("POD", "metadata.name")}
		c.Args = []string{"--listen=:$(PORT)", "--api=$(API_SERVICE_HOST)", "--name=$(POD)"}
	})
	cfg, err := ContainerConfig(context.Background(), ContainerInputs{Pod: pod, Container: &pod.Spec.Containers[0]}, Options{EnvSource: src})
	if err != nil {
		t.Fatalf("ContainerConfig: %v", err)
	}
	want := []string{"--listen=:8080", "--api=10.96.0.3", "--name=web"}
	if !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args = %v, want %v", cfg.Args, want)
	}
}

func TestContainerConfigErrorsWrapSentinel(t *testing.T) {
	tests := []struct {
		name    string
		in      func() ContainerInputs
		wantMsg string
	}{
		{name: "no container", in: func() ContainerInputs { return ContainerInputs{Pod: testPod()} }},
		{
			name: "unknown stop signal",
			in: func() ContainerInputs {
				p := testPod(func(p *v1.Pod) { p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr(v1.Signal("SIGNOPE"))} })
				return ContainerInputs{Pod: p, Container: &p.Spec.Containers[0]}
			},
		},
		{
			name: "message is the cause alone",
			in: func() ContainerInputs {
				p := testPod(withEnv(v1.EnvVar{Name: "X", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}))
				return ContainerInputs{Pod: p, Container: &p.Spec.Containers[0]}
			},
			wantMsg: "env X: fileKeyRef is not supported by this kubelet",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ContainerConfig(context.Background(), tc.in(), Options{})
			if !errors.Is(err, ErrContainerConfig) {
				t.Fatalf("err = %v, want ErrContainerConfig", err)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("message = %q, want %q", err.Error(), tc.wantMsg)
			}
		})
	}
}

func hexHash(c *v1.Container) string {
	return strconv.FormatUint(ContainerHash(c), 16)
}
