package credentialprovider

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// nodeConfigLifetime is how long the node's docker config is kept before
// it is read again, as upstream's caching provider.
const nodeConfigLifetime = 5 * time.Minute

// NodeKeyring is the node's own registry credentials, upstream's default
// keyring: the first config.json found in the kubelet's root directory,
// the working directory, $HOME/.docker and /.docker, else the first
// legacy .dockercfg in the root directory, the working directory, $HOME
// and /. It is read again every five minutes.
type NodeKeyring struct {
	jsonDirs, cfgDirs []string
	clock             clock.Clock

	mu      sync.Mutex
	ring    *Keyring
	expires time.Time
}

// NewNodeKeyring returns the node keyring for a kubelet whose root
// directory is rootDir.
func NewNodeKeyring(rootDir string, clk clock.Clock) *NodeKeyring {
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &NodeKeyring{
		jsonDirs: []string{rootDir, wd, filepath.Join(home, ".docker"), "/.docker"},
		cfgDirs:  []string{rootDir, wd, home, "/"},
		clock:    clk,
	}
}

// Lookup returns the node's credentials for repo, most specific first.
func (n *NodeKeyring) Lookup(repo string) []*runtimeapi.AuthConfig {
	n.mu.Lock()
	defer n.mu.Unlock()
	if now := n.clock.Now(); n.ring == nil || now.After(n.expires) {
		n.ring = n.read()
		n.expires = now.Add(nodeConfigLifetime)
	}
	return n.ring.Lookup(repo)
}

func (n *NodeKeyring) read() *Keyring {
	ring := &Keyring{}
	cfg, path := readFirst(n.jsonDirs, "config.json", ParseDockerConfigJSON)
	if cfg == nil {
		cfg, path = readFirst(n.cfgDirs, ".dockercfg", ParseDockercfg)
	}
	if cfg == nil {
		return ring
	}
	if err := ring.Add(cfg); err != nil {
		klog.ErrorS(err, "Ignoring the node's docker config", "path", path)
		return &Keyring{}
	}
	klog.V(4).InfoS("Read the node's docker config", "path", path)
	return ring
}

// readFirst parses the first readable, valid name in dirs.
func readFirst(dirs []string, name string, parse func([]byte) (DockerConfig, error)) (DockerConfig, string) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cfg, err := parse(data)
		if err != nil {
			klog.V(4).InfoS("Skipping a docker config that does not parse", "path", p, "err", err)
			continue
		}
		return cfg, p
	}
	return nil, ""
}
