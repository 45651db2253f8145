package criconfig

import (
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// PodLogDir is a pod's log directory: <root>/<namespace>_<name>_<uid>. An
// empty root means DefaultPodLogsDir.
func PodLogDir(root, namespace, name string, uid types.UID) string {
	return filepath.Join(orDefault(root, DefaultPodLogsDir), namespace+"_"+name+"_"+string(uid))
}

// ContainerLogPath is "<name>/<restartCount>.log", relative to the sandbox
// log directory.
func ContainerLogPath(containerName string, restartCount int) string {
	return filepath.Join(containerName, strconv.Itoa(restartCount)+".log")
}
