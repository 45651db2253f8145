package criconfig

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/dump"
)

// ContainerHash identifies the part of a container spec whose change needs
// the container recreated. Since Kubernetes 1.31 that is the name and image
// only: every other container field is immutable in the API, and resources
// change in place. The value equals the upstream kubelet's (FNV-32a over the
// spew dump of the JSON of {"image","name"}), so a kubelet swapped in keeps
// the containers the other one started.
func ContainerHash(c *v1.Container) uint64 {
	fields, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image}) // strings always encode
	h := fnv.New32a()
	h.Write([]byte(dump.ForHash(fields)))
	return uint64(h.Sum32())
}
