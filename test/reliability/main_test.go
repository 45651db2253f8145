//go:build reliability

package reliability

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/seed-kubelet/kubelet/test/e2e/framework"
)

// The suite's control plane: a separate one (hack/start-control-plane.sh
// with SEED_CP and ports of its own), started on first use and stopped when
// the suite ends. The suite never touches the shared control plane, so it
// runs beside other tests; the apiserver outage takes down yet another one.
var (
	cpOnce sync.Once
	cp     *framework.Cluster
	cpInst framework.Instance
	cpErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		if err := framework.StopInstance(cpInst); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// controlPlane returns the suite's control plane, starting it the first
// time.
func controlPlane(t *testing.T) *framework.Cluster {
	t.Helper()
	cpOnce.Do(func() {
		cpInst, cpErr = newInstance()
		if cpErr == nil {
			cp, cpErr = framework.StartInstance(cpInst)
		}
	})
	if cpErr != nil {
		t.Fatalf("the suite's control plane: %v", cpErr)
	}
	return cp
}

// newInstance names a separate control plane on free ports.
func newInstance() (framework.Instance, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return framework.Instance{}, err
	}
	inst := framework.Instance{Name: "rel-" + hex.EncodeToString(b)}
	for _, p := range []*int{&inst.APIServerPort, &inst.EtcdClientPort, &inst.EtcdPeerPort, &inst.ControllerManagerPort, &inst.SchedulerPort} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return inst, err
		}
		*p = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return inst, nil
}
