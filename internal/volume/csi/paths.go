package csi

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed-kubelet/kubelet/internal/volume/mountpoint"
)

// Names and layout, as upstream's kubernetes.io/csi plugin keeps them.
const (
	// PluginName is the in-tree plugin's name; unique volume names are
	// PluginName/<driver>^<handle>.
	PluginName = "kubernetes.io/csi"
	// PodPluginDir is PluginName escaped for a pod's volumes directory.
	PodPluginDir = "kubernetes.io~csi"
	dataFileName = "vol_data.json"
	globalMount  = "globalmount"
	podMount     = "mount"
	volNameSep   = "^"
)

// vol_data.json keys.
const (
	keySpecVolID      = "specVolID"
	keyVolumeHandle   = "volumeHandle"
	keyDriverName     = "driverName"
	keyNodeName       = "nodeName"
	keyAttachmentID   = "attachmentID"
	keyLifecycleMode  = "volumeLifecycleMode"
	lifecycleEphemera = "Ephemeral"
	lifecyclePersist  = "Persistent"
)

// EscapeQualifiedName turns a plugin or volume name into a directory name
// ("/" becomes "~"), as upstream's utilstrings.EscapeQualifiedName.
func EscapeQualifiedName(in string) string { return strings.ReplaceAll(in, "/", "~") }

// PodVolumeDir is <podsDir>/<uid>/volumes/kubernetes.io~csi/<specName>: it
// holds vol_data.json and the publish target "mount".
func PodVolumeDir(podsDir, uid, specName string) string {
	return filepath.Join(podsDir, uid, "volumes", PodPluginDir, EscapeQualifiedName(specName))
}

// PodMountPath is the NodePublishVolume target of a pod's volume.
func PodMountPath(podsDir, uid, specName string) string {
	return filepath.Join(PodVolumeDir(podsDir, uid, specName), podMount)
}

// GlobalDir is <root-dir>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>:
// it holds vol_data.json and the staging target "globalmount".
func GlobalDir(rootDir, driver, handle string) string {
	return filepath.Join(rootDir, "plugins", PluginName, driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))))
}

// GlobalMountPath is the NodeStageVolume target of a volume.
func GlobalMountPath(rootDir, driver, handle string) string {
	return filepath.Join(GlobalDir(rootDir, driver, handle), globalMount)
}

// AttachmentName is the VolumeAttachment's name for a volume on a node:
// csi-<sha256(handle+driver+node)>.
func AttachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// EphemeralHandle is the volume handle of an inline ephemeral volume:
// csi-<sha256(podUID+volumeName)>.
func EphemeralHandle(podUID, volumeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(podUID+volumeName)))
}

// UniqueVolumeName is how node.status.volumesInUse and volumesAttached
// name a CSI volume: kubernetes.io/csi/<driver>^<handle>.
func UniqueVolumeName(driver, handle string) string {
	return PluginName + "/" + driver + volNameSep + handle
}

// volData is the content of a vol_data.json.
type volData map[string]string

func writeVolData(dir string, d volData) error {
	b, err := json.Marshal(map[string]string(d))
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+dataFileName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("save volume data file %s: %w", filepath.Join(dir, dataFileName), err)
	}
	return os.Rename(tmp, filepath.Join(dir, dataFileName))
}

// readVolData reads dir/vol_data.json; a missing file wraps fs.ErrNotExist.
func readVolData(dir string) (volData, error) {
	b, err := os.ReadFile(filepath.Join(dir, dataFileName))
	if err != nil {
		return nil, err
	}
	d := volData{}
	if err := json.Unmarshal(b, (*map[string]string)(&d)); err != nil {
		return nil, fmt.Errorf("parse volume data file %s: %w", filepath.Join(dir, dataFileName), err)
	}
	if d[keyDriverName] == "" || d[keyVolumeHandle] == "" {
		return nil, fmt.Errorf("volume data file %s names no driver or volume handle", filepath.Join(dir, dataFileName))
	}
	return d, nil
}

// PodVolume is a CSI volume found under a pod's directory.
type PodVolume struct {
	PodUID    string
	SpecName  string // directory name (the PV's name, or the pod volume's)
	Driver    string
	Handle    string
	Ephemeral bool
	// Dir is PodVolumeDir; Target its mount directory.
	Dir, Target string
}

// podVolumesOnDisk lists the CSI volumes below podsDir/uid. A directory
// without a readable vol_data.json is returned with no driver: nothing was
// published there (upstream writes the file before NodePublishVolume).
func podVolumesOnDisk(podsDir, uid string) ([]PodVolume, error) {
	base := filepath.Join(podsDir, uid, "volumes", PodPluginDir)
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []PodVolume
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		v := PodVolume{PodUID: uid, SpecName: e.Name(), Dir: dir, Target: filepath.Join(dir, podMount)}
		if d, err := readVolData(dir); err == nil {
			v.Driver, v.Handle, v.Ephemeral = d[keyDriverName], d[keyVolumeHandle], d[keyLifecycleMode] == lifecycleEphemera
			if d[keySpecVolID] != "" {
				v.SpecName = d[keySpecVolID]
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// globalVolume is a staged volume found under the plugin directory.
type globalVolume struct {
	Driver, Handle string
	Dir            string
}

// globalVolumesOnDisk lists <root>/plugins/kubernetes.io/csi/<driver>/<sha>
// directories that hold a vol_data.json.
func globalVolumesOnDisk(rootDir string) []globalVolume {
	base := filepath.Join(rootDir, "plugins", PluginName)
	drivers, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []globalVolume
	for _, d := range drivers {
		if !d.IsDir() || d.Name() == "volumeDevices" {
			continue
		}
		vols, err := os.ReadDir(filepath.Join(base, d.Name()))
		if err != nil {
			continue
		}
		for _, v := range vols {
			dir := filepath.Join(base, d.Name(), v.Name())
			if data, err := readVolData(dir); err == nil {
				out = append(out, globalVolume{Driver: data[keyDriverName], Handle: data[keyVolumeHandle], Dir: dir})
			}
		}
	}
	return out
}

// Published reports whether a pod volume is published on disk: its
// vol_data.json names a driver and its target is mounted. A kubelet that
// restarts takes such a volume as set up, as upstream reconstructs mounted
// volumes, instead of making a running pod wait for its driver.
func Published(podsDir, uid, specName string) bool {
	dir := PodVolumeDir(podsDir, uid, specName)
	if _, err := readVolData(dir); err != nil {
		return false
	}
	ok, err := mountpoint.IsMountPoint(filepath.Join(dir, podMount))
	return err == nil && ok
}
