package stats

import (
	"reflect"
	"testing"
	"time"
)

const netDevSample = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 233780727  402781    0    0    0     0          0         0 233780727  402781    0    0    0     0       0          0
  eth0: 494556256   30651    3    0    0     0          0         0  2733673   23933    4    0    0     0       0          0
  cni0:  314619    4573    0    0    0     0          0      4437    64342     639    0   32    0     0       0          0
veth7384ca34:     542       7    0    0    0     0          0         0     1230      15    0    0    0     0       0          0
`

func TestParseNetDev(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []netDevice
		wantErr bool
	}{
		{
			name: "host sample",
			in:   netDevSample,
			want: []netDevice{
				{Name: "lo", RxBytes: 233780727, TxBytes: 233780727},
				{Name: "eth0", RxBytes: 494556256, RxErrors: 3, TxBytes: 2733673, TxErrs: 4},
				{Name: "cni0", RxBytes: 314619, TxBytes: 64342},
				{Name: "veth7384ca34", RxBytes: 542, TxBytes: 1230},
			},
		},
		{name: "headers only", in: "Inter-|\n face |\n", want: nil},
		{name: "short row", in: "eth0: 1 2 3\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseNetDev([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNetworkStats(t *testing.T) {
	now := time.Unix(100, 0)
	devs := []netDevice{{Name: "lo", RxBytes: 1}, {Name: "ens3", RxBytes: 5}, {Name: "veth1", RxBytes: 2}, {Name: "docker0"}, {Name: "cni0", RxBytes: 7}}
	tests := []struct {
		name         string
		devs         []netDevice
		fallback     string
		wantNil      bool
		wantDefault  string
		wantIfaces   []string
		wantDefaultB uint64
	}{
		{name: "eth0 is the default", devs: append([]netDevice{{Name: "eth0", RxBytes: 9}}, devs...), fallback: "ens3", wantDefault: "eth0", wantDefaultB: 9, wantIfaces: []string{"eth0", "ens3", "cni0"}},
		{name: "default route interface without eth0", devs: devs, fallback: "ens3", wantDefault: "ens3", wantDefaultB: 5, wantIfaces: []string{"ens3", "cni0"}},
		{name: "no default known", devs: devs, wantDefault: "", wantIfaces: []string{"ens3", "cni0"}},
		{name: "only ignored devices", devs: []netDevice{{Name: "lo"}, {Name: "veth0"}}, wantNil: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := networkStats(tc.devs, tc.fallback, now)
			if tc.wantNil {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			if got.Name != tc.wantDefault {
				t.Errorf("default = %q, want %q", got.Name, tc.wantDefault)
			}
			if tc.wantDefault != "" && *got.RxBytes != tc.wantDefaultB {
				t.Errorf("default rx = %d, want %d", *got.RxBytes, tc.wantDefaultB)
			}
			var names []string
			for _, i := range got.Interfaces {
				names = append(names, i.Name)
			}
			if !reflect.DeepEqual(names, tc.wantIfaces) {
				t.Errorf("interfaces = %v, want %v", names, tc.wantIfaces)
			}
			if !got.Time.Time.Equal(now) {
				t.Errorf("time = %v, want %v", got.Time, now)
			}
		})
	}
}

func TestParseDefaultRoute(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "default via eth0",
			in: "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
				"cni0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n" +
				"ens5\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n",
			want: "ens5",
		},
		{name: "no default route", in: "Iface\tDestination\n" + "cni0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n", want: ""},
		{name: "empty", in: "", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseDefaultRoute([]byte(tc.in)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantBusy uint64
		wantBoot int64
		wantErr  bool
	}{
		{
			name:     "busy is user nice system irq softirq",
			in:       "cpu  100 2 30 5000 40 5 6 700 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1\nbtime 1700000000\n",
			wantBusy: (100 + 2 + 30 + 5 + 6) * uint64(10*time.Millisecond),
			wantBoot: 1700000000,
		},
		{name: "missing btime", in: "cpu  1 2 3 4 5 6 7 8\n", wantErr: true},
		{name: "short cpu line", in: "cpu 1 2\nbtime 1\n", wantErr: true},
		{name: "bad number", in: "cpu  a 2 3 4 5 6 7 8\nbtime 1\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got.BusyNanos != tc.wantBusy || got.BootTime.Unix() != tc.wantBoot {
				t.Errorf("got %+v, want busy %d boot %d", got, tc.wantBusy, tc.wantBoot)
			}
		})
	}
}

func TestParseLoadavgTasks(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{name: "normal", in: "3.58 4.20 5.81 2/232 29107\n", want: 232},
		{name: "short", in: "1 2 3", wantErr: true},
		{name: "no slash", in: "1 2 3 4 5", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLoadavgTasks([]byte(tc.in))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %d, %v; want %d, wantErr %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
