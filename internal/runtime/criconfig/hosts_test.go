package criconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestHostsFile(t *testing.T) {
	const head = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "10.1.2.4", Hostnames: []string{"baz"}}}
	nodeHosts := files(map[string]string{"/etc/hosts": "127.0.0.1 localhost\n10.0.0.5 node-a\n"})
	tests := []struct {
		name    string
		pod     *v1.Pod
		podIPs  []string
		want    string
		wantErr bool
	}{
		{
			name:   "pod IP and hostname",
			pod:    testPod(),
			podIPs: []string{"10.244.0.7"},
			want:   head + "10.244.0.7\tweb\n",
		},
		{
			name:   "dual stack with subdomain",
			pod:    testPod(func(p *v1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.Subdomain = "db" }),
			podIPs: []string{"10.244.0.7", "fd00::7"},
			want: head +
				"10.244.0.7\tdb-0.db.shop.svc.cluster.local\tdb-0\n" +
				"fd00::7\tdb-0.db.shop.svc.cluster.local\tdb-0\n",
		},
		{
			name:   "host aliases appended",
			pod:    testPod(func(p *v1.Pod) { p.Spec.HostAliases = aliases }),
			podIPs: []string{"10.244.0.7"},
			want: head + "10.244.0.7\tweb\n" +
				"\n# Entries added by HostAliases.\n" +
				"10.1.2.3\tfoo.local\tbar.local\n" +
				"10.1.2.4\tbaz\n",
		},
		{
			name: "host network copies the node file",
			pod:  testPod(func(p *v1.Pod) { p.Spec.HostNetwork = true; p.Spec.HostAliases = aliases[1:] }),
			want: "# Kubernetes-managed hosts file (host network).\n" +
				"127.0.0.1 localhost\n10.0.0.5 node-a\n" +
				"\n# Entries added by HostAliases.\n10.1.2.4\tbaz\n",
		},
		{name: "invalid hostname", pod: testPod(func(p *v1.Pod) { p.Spec.Hostname = "BAD_" }), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostsFile(tc.pod, tc.podIPs, Options{ClusterDomain: "cluster.local", ReadFile: nodeHosts})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if string(got) != tc.want {
				t.Errorf("HostsFile =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestHostsFileHostNetworkReadError(t *testing.T) {
	pod := testPod(func(p *v1.Pod) { p.Spec.HostNetwork = true })
	if _, err := HostsFile(pod, nil, Options{ReadFile: files(nil)}); err == nil {
		t.Fatal("want an error when the node hosts file cannot be read")
	}
}
