package options

import (
	"path/filepath"
	"testing"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// TestKubeadmGeneratedFilesDrawNoWarnings starts from what kubeadm v1.36.3
// lays down on a node (testdata/kubeadm, see its README): the flags of its
// systemd drop-in and kubeadm-flags.env, and the KubeletConfiguration it
// generated. Every flag and field there is honoured, so none may draw an
// "unsupported" warning, and the configuration validates.
func TestKubeadmGeneratedFilesDrawNoWarnings(t *testing.T) {
	dir := filepath.Join("testdata", "kubeadm")
	args, err := framework.UnitCommand(filepath.Join(dir, "10-kubeadm.conf"), map[string]string{
		"/var/lib/kubelet/kubeadm-flags.env": filepath.Join(dir, "kubeadm-flags.env"),
		"/etc/default/kubelet":               filepath.Join(dir, "no-such-file"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml", "--hostname-override=control-plane-1"}
	if len(args) != len(want) {
		t.Fatalf("unit starts the kubelet with %q, want %q", args, want)
	}
	for i := range want {
		if args[i] != want[i] {
			t.Fatalf("unit starts the kubelet with %q, want %q", args, want)
		}
	}
	// The file kubeadm wrote, where the unit names it.
	args[2] = "--config=" + filepath.Join(dir, "config.yaml")
	o, err := Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Warnings) != 0 {
		t.Errorf("kubeadm's files draw warnings:\n%q", o.Warnings)
	}
	if err := Validate(o); err != nil {
		t.Errorf("kubeadm's configuration does not validate: %v", err)
	}
	c := o.Config
	if !c.RotateCertificates || c.StaticPodPath != "/etc/kubernetes/manifests" || c.Authorization.Mode != "Webhook" ||
		c.Authentication.X509.ClientCAFile != "/etc/kubernetes/pki/ca.crt" || c.CgroupDriver != "systemd" ||
		c.ContainerRuntimeEndpoint != "unix:///var/run/containerd/containerd.sock" {
		t.Errorf("configuration not read as kubeadm wrote it: %+v", c)
	}
	if o.Flags.BootstrapKubeconfig != "/etc/kubernetes/bootstrap-kubelet.conf" || o.Flags.KubeConfig != "/etc/kubernetes/kubelet.conf" ||
		o.Flags.HostnameOverride != "control-plane-1" {
		t.Errorf("flags not read: %+v", o.Flags)
	}
}
